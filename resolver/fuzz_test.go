package resolver

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func packed(t testing.TB, f func(m *dns.Msg)) []byte {
	m := new(dns.Msg)
	m.SetQuestion("fuzz.test.", dns.TypeA)
	m.Id = 0x1234
	m.Response = true
	f(m)
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rr(t testing.TB, s string) dns.RR {
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FuzzDeliver feeds arbitrary datagrams to a socket with one query in
// flight: nothing may panic, and whatever is delivered must be a response
// to exactly that query.
func FuzzDeliver(f *testing.F) {
	f.Add(packed(f, func(m *dns.Msg) { m.Answer = []dns.RR{rr(f, "fuzz.test. 60 IN A 192.0.2.1")} }), true)
	f.Add(packed(f, func(m *dns.Msg) { m.Question[0].Name = "other.test." }), true)
	f.Add(packed(f, func(m *dns.Msg) { m.Truncated = true }), false)
	f.Add([]byte{0x12, 0x34, 0x80}, true)
	f.Fuzz(func(t *testing.T, b []byte, fromServer bool) {
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatalf("binding a loopback UDP socket: %v", err)
		}
		defer conn.Close()
		var st counters
		tr := &transport{stats: &st, timeout: time.Second}
		s := &udpSocket{conn: conn, pending: map[uint16]*pendingQuery{}}
		server := netip.MustParseAddrPort("127.0.0.1:53")
		p := &pendingQuery{server: server, qname: "fuzz.test.", qtype: dns.TypeA, reply: make(chan *dns.Msg, 1)}
		s.pending[0x1234] = p
		from := server
		if !fromServer {
			from = netip.MustParseAddrPort("127.0.0.1:54")
		}
		tr.deliver(s, b, from)
		select {
		case m := <-p.reply:
			if !fromServer || m.Id != 0x1234 || !matches(m, "fuzz.test.", dns.TypeA) && !questionlessError(m) {
				t.Fatalf("delivered a reply that does not fit: from server %v, %v", fromServer, m)
			}
		default:
			if st.snapshot().Rejected() != 1 {
				t.Fatalf("datagram neither delivered nor counted as rejected: %+v", st.snapshot())
			}
		}
	})
}

// FuzzChain walks arbitrary answer sections: it must end, never return an
// address whose record is off the chain, and never exceed the link limit.
func FuzzChain(f *testing.F) {
	seed := func(rrs ...string) []byte {
		return packed(f, func(m *dns.Msg) {
			for _, s := range rrs {
				m.Answer = append(m.Answer, rr(f, s))
			}
		})
	}
	f.Add(seed("fuzz.test. 60 IN CNAME a.test.", "a.test. 30 IN A 192.0.2.1"))
	f.Add(seed("fuzz.test. 60 IN CNAME a.test.", "a.test. 60 IN CNAME fuzz.test."))
	f.Add(seed("fuzz.test. 60 IN CNAME a.test.", "b.test. 60 IN A 192.0.2.66"))
	f.Add(seed("FUZZ.test. 60 IN A 192.0.2.1", "fuzz.test. 60 CH A 192.0.2.66"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(dns.Msg)
		if m.Unpack(b) != nil {
			return
		}
		c := newChain("fuzz.test.", dns.TypeA, 3)
		target := "fuzz.test."
		for range 10 {
			a, next, done := c.walk(m.Answer, target)
			if done {
				if a.st == statusOK {
					for _, addr := range a.addrs {
						if !onChain(m.Answer, c.seen, addr) {
							t.Fatalf("address %v not from a record on the chain %v", addr, c.seen)
						}
					}
				}
				if c.links > c.max+1 {
					t.Fatalf("%d links followed, limit %d", c.links, c.max)
				}
				return
			}
			if next == target || !c.seen[next] {
				t.Fatalf("walk continues at %q from %q", next, target)
			}
			target = next
		}
		t.Fatal("walk did not end within 10 answers")
	})
}

func onChain(rrs []dns.RR, seen map[string]bool, addr netip.Addr) bool {
	for _, r := range rrs {
		if a, ok := r.(*dns.A); ok && a.Hdr.Class == dns.ClassINET && seen[strings.ToLower(a.Hdr.Name)] {
			if got, ok := netip.AddrFromSlice(a.A.To4()); ok && got == addr {
				return true
			}
		}
	}
	return false
}

// FuzzCacheKey: a name put under its canonical form is found under any
// spelling that folds to it, and no other name finds it.
func FuzzCacheKey(f *testing.F) {
	f.Add("www.Example.org", "WWW.example.ORG.")
	f.Add(strings.Repeat("a", 40)+".test", strings.Repeat("A", 40)+".TEST")
	f.Add("a.test", "b.test")
	f.Fuzz(func(t *testing.T, name, probe string) {
		canon, err := CanonicalHost(name)
		if err != nil {
			return
		}
		c := newCache(2, 2)
		want := netip.MustParseAddr("192.0.2.1")
		c.put(canon, statusOK, []netip.Addr{want}, 10, 0)
		got, _, ok := c.get([]byte(name), 0, nil)
		if !ok || len(got) != 1 || got[0] != want {
			t.Fatalf("%q put as %q not found: %v %v", name, canon, got, ok)
		}
		pc, perr := CanonicalHost(probe)
		_, _, hit := c.get([]byte(probe), 0, nil)
		same := perr == nil && pc == canon
		if hit != same && !(perr != nil && bytes.EqualFold([]byte(strings.TrimSuffix(probe, ".")), []byte(canon))) {
			t.Fatalf("probe %q (canonical %q, %v) hit = %v for %q", probe, pc, perr, hit, canon)
		}
	})
}
