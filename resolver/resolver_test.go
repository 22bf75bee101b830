package resolver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestIPLiteralAndBadName(t *testing.T) {
	srv := startServer(t, zone(t, nil))
	r := newTestResolver(t, Config{}, srv.addr)
	ctx := context.Background()
	for in, want := range map[string]string{"192.0.2.1": "192.0.2.1", "[::1]": "::1", "::ffff:10.0.0.1": "10.0.0.1"} {
		got, err := r.Lookup(ctx, in)
		if err != nil || len(got) != 1 || got[0].String() != want {
			t.Errorf("Lookup(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := r.Lookup(ctx, "bad..name"); !errors.Is(err, ErrBadName) {
		t.Errorf("bad name: %v", err)
	}
	if srv.total() != 0 {
		t.Errorf("literals and bad names sent %d queries", srv.total())
	}
}

func TestTTLFloorCeilingAndExpiry(t *testing.T) {
	srv := startServer(t, zone(t, map[string][]string{
		"short.test": {"0 IN A 192.0.2.1"},
		"mid.test":   {"100 IN A 192.0.2.2"},
		"long.test":  {"999999 IN A 192.0.2.3"},
	}))
	clk := newFakeClock()
	r := newTestResolver(t, Config{Network: "ip4", Now: clk.Now, MinTTL: 10 * time.Second, MaxTTL: time.Hour}, srv.addr)
	ctx := context.Background()
	for _, h := range []string{"short.test", "mid.test", "long.test"} {
		if _, err := r.Lookup(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	live := func(h string) bool { _, ok, _ := r.AppendCached(nil, h); return ok }
	clk.Advance(9 * time.Second)
	if !live("short.test") {
		t.Error("TTL 0 not raised to the 10 s floor")
	}
	clk.Advance(2 * time.Second)
	if live("short.test") || !live("mid.test") {
		t.Error("after 11 s: short should have expired, mid not")
	}
	clk.Advance(90 * time.Second)
	if live("mid.test") || !live("long.test") {
		t.Error("after 101 s: mid should have expired, long not")
	}
	clk.Advance(time.Hour)
	if live("long.test") {
		t.Error("TTL 999999 not capped at the 1 h ceiling")
	}
	// An expired entry is fetched again.
	if _, err := r.Lookup(ctx, "mid.test"); err != nil || srv.count("mid.test", dns.TypeA) != 2 {
		t.Errorf("re-resolution after expiry: %v, %d queries", err, srv.count("mid.test", dns.TypeA))
	}
}

func TestNegativeCaching(t *testing.T) {
	failing := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeServerFailure)
		w.WriteMsg(m)
	})
	clk := newFakeClock()
	cfg := Config{Network: "ip4", Now: clk.Now, NegativeTTL: time.Minute, ServFailTTL: 5 * time.Second}
	r := newTestResolver(t, cfg, failing.addr)
	ctx := context.Background()
	if _, err := r.Lookup(ctx, "x.test"); !errors.Is(err, ErrServerFailure) {
		t.Fatalf("SERVFAIL: %v", err)
	}
	if _, err := r.Lookup(ctx, "x.test"); !errors.Is(err, ErrServerFailure) || failing.total() != 1 {
		t.Errorf("SERVFAIL not cached: %v, %d queries", err, failing.total())
	}
	clk.Advance(6 * time.Second)
	r.Lookup(ctx, "x.test")
	if failing.total() != 2 {
		t.Errorf("SERVFAIL cached past ServFailTTL: %d queries", failing.total())
	}

	nx := startServer(t, zone(t, map[string][]string{"y.test": {"60 IN AAAA ::1"}}))
	r = newTestResolver(t, cfg, nx.addr)
	if _, err := r.Lookup(ctx, "nx.test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("NXDOMAIN: %v", err)
	}
	if _, err := r.Lookup(ctx, "y.test"); !errors.Is(err, ErrNoAddress) {
		t.Errorf("no A record: %v", err)
	}
	clk.Advance(59 * time.Second)
	r.Lookup(ctx, "nx.test")
	r.Lookup(ctx, "y.test")
	if nx.total() != 2 {
		t.Errorf("negative answers not cached for NegativeTTL: %d queries", nx.total())
	}
}

func TestFailover(t *testing.T) {
	servfail := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeServerFailure)
		w.WriteMsg(m)
	})
	good := startServer(t, zone(t, map[string][]string{"a.test": {"60 IN A 192.0.2.1"}}))
	r := newTestResolver(t, Config{Network: "ip4"}, servfail.addr, good.addr)
	if got, err := r.Lookup(context.Background(), "a.test"); err != nil || len(got) != 1 {
		t.Fatalf("SERVFAIL then good server: %v %v", got, err)
	}
	if r.ServerDown(0) {
		t.Error("a server that answers SERVFAIL was marked down")
	}
}

// TestDeadServer: with the first of two servers dead, only the first query
// waits for it; the rest go straight to the second until DownFor has passed,
// then one query probes the dead server again.
func TestDeadServer(t *testing.T) {
	dead := silentServer(t)
	names := map[string][]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		names[n+".test"] = []string{"60 IN A 192.0.2.1"}
	}
	good := startServer(t, zone(t, names))
	clk := newFakeClock()
	r := newTestResolver(t, Config{Network: "ip4", Now: clk.Now, Timeout: time.Second, DownFor: 30 * time.Second}, dead, good.addr)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := r.Lookup(ctx, n+".test"); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if st := r.Stats(); st.Timeouts != 1 || !r.ServerDown(0) {
		t.Fatalf("after 3 lookups: %d timeouts (want 1), server 0 down = %v", st.Timeouts, r.ServerDown(0))
	}
	clk.Advance(31 * time.Second)
	var wg sync.WaitGroup
	for _, n := range []string{"d", "e", "f"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Lookup(ctx, n+".test"); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		}()
	}
	wg.Wait()
	if st := r.Stats(); st.Timeouts != 2 {
		t.Errorf("after DownFor: %d timeouts, want exactly one more (one probe)", st.Timeouts)
	}
}

func TestAllServersDead(t *testing.T) {
	r := newTestResolver(t, Config{Network: "ip4", Timeout: 500 * time.Millisecond}, silentServer(t), silentServer(t))
	ctx := context.Background()
	if _, err := r.Lookup(ctx, "a.test"); err == nil {
		t.Fatal("lookup against dead servers succeeded")
	}
	if _, err := r.Lookup(ctx, "b.test"); !errors.Is(err, ErrAllDown) {
		t.Errorf("second name: %v, want ErrAllDown without waiting", err)
	}
	if st := r.Stats(); st.Timeouts != 2 {
		t.Errorf("%d timeouts, want 2 (one per dead server)", st.Timeouts)
	}
}

func TestCNAME(t *testing.T) {
	srv := startServer(t, zone(t, map[string][]string{
		"www.test":    {"300 IN CNAME alias.test."},
		"alias.test":  {"50 IN CNAME host.test."},
		"host.test":   {"600 IN A 192.0.2.9"},
		"loop1.test":  {"60 IN CNAME loop2.test."},
		"loop2.test":  {"60 IN CNAME loop1.test."},
		"self.test":   {"60 IN CNAME SELF.test."},
		"c1.test":     {"60 IN CNAME c2.test."},
		"c2.test":     {"60 IN CNAME c3.test."},
		"c3.test":     {"60 IN CNAME c4.test."},
		"c4.test":     {"60 IN CNAME host.test."},
		"dangle.test": {"60 IN CNAME nowhere.test."},
	}))
	clk := newFakeClock()
	r := newTestResolver(t, Config{Network: "ip4", Now: clk.Now, MinTTL: time.Second, MaxCNAME: 3}, srv.addr)
	ctx := context.Background()
	got, err := r.Lookup(ctx, "www.test")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.9") {
		t.Fatalf("CNAME chain: %v %v", got, err)
	}
	clk.Advance(51 * time.Second) // the shortest TTL on the chain
	if _, ok, _ := r.AppendCached(nil, "www.test"); ok {
		t.Error("chain cached longer than its shortest TTL")
	}
	for _, h := range []string{"loop1.test", "self.test"} {
		if _, err := r.Lookup(ctx, h); !errors.Is(err, ErrCNAMELoop) {
			t.Errorf("%s: %v, want ErrCNAMELoop", h, err)
		}
	}
	if _, err := r.Lookup(ctx, "c1.test"); !errors.Is(err, ErrCNAMETooLong) {
		t.Errorf("4-link chain with MaxCNAME 3: %v", err)
	}
	if _, err := r.Lookup(ctx, "dangle.test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("CNAME to a missing name: %v", err)
	}
}

func TestTruncationFallsBackToTCP(t *testing.T) {
	srv := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			m.Truncated = true
		} else {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 44)})
		}
		w.WriteMsg(m)
	})
	r := newTestResolver(t, Config{Network: "ip4"}, srv.addr)
	got, err := r.Lookup(context.Background(), "big.test")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.44") {
		t.Fatalf("truncated answer: %v %v", got, err)
	}
	if r.Stats().TCPFallbacks != 1 {
		t.Errorf("stats: %+v", r.Stats())
	}
}

func TestSharedFlight(t *testing.T) {
	release := make(chan struct{})
	inner := zone(t, map[string][]string{"slow.test": {"60 IN A 192.0.2.5"}})
	srv := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		<-release
		inner(w, q)
	})
	r := newTestResolver(t, Config{Network: "ip4", Timeout: 5 * time.Second}, srv.addr)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Lookup(context.Background(), "SLOW.test"); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the lookups pile up on the flight
	close(release)
	wg.Wait()
	if n := srv.count("slow.test", dns.TypeA); n != 1 {
		t.Errorf("20 concurrent lookups sent %d queries, want 1", n)
	}
}

// TestSpoofedRepliesRejected: before the genuine answer, the client's socket
// receives forged replies: from another port, with a wrong id, for another
// name, not marked as a response, garbage, and an answer to nothing. None may
// reach the cache.
func TestSpoofedRepliesRejected(t *testing.T) {
	forger, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	evil := net.IPv4(192, 0, 2, 66)
	srv := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		client := w.RemoteAddr()
		reply := func(mut func(m *dns.Msg)) []byte {
			m := new(dns.Msg)
			m.SetReply(q)
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: evil}}
			mut(m)
			b, err := m.Pack()
			if err != nil {
				t.Error(err)
			}
			return b
		}
		// Right id and question, wrong source port.
		forger.WriteTo(reply(func(*dns.Msg) {}), client)
		// From the server's own port: wrong id, another name, not a response.
		w.Write(reply(func(m *dns.Msg) { m.Id ^= 0x5a5a }))
		w.Write(reply(func(m *dns.Msg) { m.Question[0].Name = "evil.test." }))
		w.Write(reply(func(m *dns.Msg) { m.Response = false }))
		w.Write(reply(func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAAAA }))
		good := reply(func(m *dns.Msg) { m.Answer[0].(*dns.A).A = net.IPv4(192, 0, 2, 1) })
		w.Write(good[:len(good)-3]) // cut short: malformed
		w.Write([]byte{1, 2, 3})
		time.Sleep(20 * time.Millisecond) // let the forgeries arrive first
		w.Write(good)
		// An answer after the real one: no query is waiting any more.
		w.Write(reply(func(*dns.Msg) {}))
	})
	r := newTestResolver(t, Config{Network: "ip4", Sockets: 1, Timeout: 2 * time.Second}, srv.addr)
	got, err := r.Lookup(context.Background(), "bank.test")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.1") {
		t.Fatalf("Lookup = %v, %v; want the genuine 192.0.2.1", got, err)
	}
	want := Stats{RejectedSource: 1, RejectedUnsolicited: 1, RejectedQuestion: 3, RejectedMalformed: 2}
	deadline := time.Now().Add(2 * time.Second)
	for r.Stats().Rejected() < want.Rejected()+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the late forgery is counted asynchronously
	}
	st := r.Stats()
	want.RejectedUnsolicited++ // the late one
	if st.RejectedSource != want.RejectedSource || st.RejectedUnsolicited != want.RejectedUnsolicited ||
		st.RejectedQuestion != want.RejectedQuestion || st.RejectedMalformed != want.RejectedMalformed {
		t.Errorf("rejections = %+v, want %+v", st, want)
	}
	if got, _, _ := r.AppendCached(nil, "bank.test"); len(got) != 1 || got[0] != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("cache holds %v", got)
	}
	if _, ok, _ := r.AppendCached(nil, "evil.test"); ok {
		t.Error("a name never asked entered the cache")
	}
}

func TestContextCancel(t *testing.T) {
	r := newTestResolver(t, Config{Network: "ip4", Timeout: 2 * time.Second}, silentServer(t))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Lookup(ctx, "a.test"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
}
