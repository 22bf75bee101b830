package resolver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// tcpSilentServer answers UDP with handler and accepts TCP connections
// that it never answers (a firewall or a server that drops TCP queries),
// until the test ends.
func tcpSilentServer(t *testing.T, handler dns.HandlerFunc) netip.AddrPort {
	t.Helper()
	pc, l := listenUDPTCP(t)
	udp := &dns.Server{PacketConn: pc, Handler: handler}
	started := make(chan struct{})
	udp.NotifyStartedFunc = func() { close(started) }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); udp.ActivateAndServe() }()
	<-started
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		udp.Shutdown()
		l.Close()
		wg.Wait()
	})
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// TestTruncatedThenTCPTimeout: a server that answers a large name's UDP
// query truncated and never answers over TCP is alive — it answered — and
// must not be marked down: that made every other name fail with ErrAllDown
// for DownFor, though the server answers them over UDP.
func TestTruncatedThenTCPTimeout(t *testing.T) {
	srv := tcpSilentServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Name == "big.test." {
			m.Truncated = true
		} else {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 7)})
		}
		w.WriteMsg(m)
	})
	r := newTestResolver(t, Config{Network: "ip4", Timeout: 300 * time.Millisecond, DownFor: time.Minute}, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.Lookup(ctx, "big.test"); err == nil {
		t.Fatal("big.test resolved though TCP never answered")
	}
	if r.ServerDown(0) {
		t.Error("a server that answered the UDP query was marked down")
	}
	got, err := r.Lookup(ctx, "small.test")
	if errors.Is(err, ErrAllDown) || err != nil || len(got) != 1 {
		t.Errorf("small.test after big.test's TCP timeout: %v, %v", got, err)
	}
}

// TestManyAddresses: an answer with a thousand A records. A miss returned
// all of them, and every hit after it the MaxAddrs the cache keeps; both
// must return those MaxAddrs, the answer's first, in order.
func TestManyAddresses(t *testing.T) {
	srv := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for i := range 1000 {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A: net.IPv4(10, 0, byte(i>>8), byte(i))})
		}
		w.WriteMsg(m)
	})
	r := newTestResolver(t, Config{Network: "ip4"}, srv.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	miss, err := r.Lookup(ctx, "many.test")
	if err != nil {
		t.Fatal(err)
	}
	hit, err := r.Lookup(ctx, "many.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(miss) != MaxAddrs || !slices.Equal(miss, hit) || miss[0] != netip.MustParseAddr("10.0.0.0") {
		t.Errorf("miss: %d addresses %v; hit: %v", len(miss), miss[:min(len(miss), 6)], hit)
	}
}

// TestTruncatedMidRecord: a server that cuts a long UDP answer at 500
// bytes, in the middle of a record, and sets TC (as RFC 1035 allows). The
// reply was refused as malformed, the query timed out and the server was
// marked down; it must be taken as truncated and the query asked again
// over TCP.
func TestTruncatedMidRecord(t *testing.T) {
	pc, l := listenUDPTCP(t)
	answer := func(q *dns.Msg) *dns.Msg {
		m := new(dns.Msg)
		m.SetReply(q)
		for i := range 100 {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A: net.IPv4(10, 0, 0, byte(i))})
		}
		return m
	}
	tcp := &dns.Server{Listener: l, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) { w.WriteMsg(answer(q)) })}
	started := make(chan struct{})
	tcp.NotifyStartedFunc = func() { close(started) }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); tcp.ActivateAndServe() }()
	<-started
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			m := answer(q)
			m.Truncated = true
			b, err := m.Pack()
			if err != nil || len(b) <= 500 {
				t.Errorf("packing the answer: %d bytes, %v", len(b), err)
				continue
			}
			pc.WriteTo(b[:500], from)
		}
	}()
	defer func() { tcp.Shutdown(); pc.Close(); wg.Wait() }()
	srv := netip.MustParseAddrPort(pc.LocalAddr().String())
	r := newTestResolver(t, Config{Network: "ip4", Timeout: time.Second, DownFor: time.Minute}, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.Lookup(ctx, "cut.test")
	if err != nil || len(got) != MaxAddrs || got[0] != netip.MustParseAddr("10.0.0.0") {
		t.Errorf("lookup: %v, %v", got, err)
	}
	if st := r.Stats(); st.TCPFallbacks != 1 || st.Timeouts != 0 || r.ServerDown(0) {
		t.Errorf("stats %+v, server down %v", st, r.ServerDown(0))
	}
}

// TestQuestionlessRefused: a server that answers REFUSED without the
// question section (RFC 1035 does not require it; 9.9.9.9 does this).
// The reply was refused as not matching, the query waited out its timeout
// and the server was marked down; the lookup must go on to the next
// server at once, the first still up.
func TestQuestionlessRefused(t *testing.T) {
	refusing := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeRefused)
		m.Question = nil
		w.WriteMsg(m)
	})
	good := startServer(t, zone(t, map[string][]string{"a.test": {"60 IN A 192.0.2.1"}}))
	r := newTestResolver(t, Config{Network: "ip4", Timeout: time.Second, DownFor: time.Minute}, refusing.addr, good.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if got, err := r.Lookup(ctx, "a.test"); err != nil || len(got) != 1 {
		t.Errorf("lookup: %v, %v", got, err)
	}
	if st := r.Stats(); st.Timeouts != 0 || r.ServerDown(0) {
		t.Errorf("stats %+v, refusing server down %v", st, r.ServerDown(0))
	}
}
