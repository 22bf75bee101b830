package resolver

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/testenv"
	"github.com/miekg/dns"
)

// listenUDPTCP binds a UDP socket and a TCP listener on the same free
// loopback port.
func listenUDPTCP(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		pc, err := net.ListenPacket("udp4", l.Addr().String())
		if err == nil {
			return pc, l
		}
		l.Close()
	}
	t.Fatal("no free loopback port for both UDP and TCP")
	return nil, nil
}

// testServer is an in-process DNS server on loopback whose behaviour the
// test chooses.
type testServer struct {
	addr netip.AddrPort
	pc   net.PacketConn

	mu      sync.Mutex
	queries map[string]int // "name type" -> count (UDP and TCP)
}

func (s *testServer) count(name string, qtype uint16) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[dns.Fqdn(name)+" "+dns.TypeToString[qtype]]
}

func (s *testServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.queries {
		n += c
	}
	return n
}

// startServer runs handler for every query on a fresh loopback port, over
// UDP and TCP, until the test ends.
func startServer(t testing.TB, handler func(w dns.ResponseWriter, q *dns.Msg)) *testServer {
	t.Helper()
	pc, l := listenUDPTCP(t)
	s := &testServer{addr: netip.MustParseAddrPort(pc.LocalAddr().String()), pc: pc, queries: map[string]int{}}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		if len(q.Question) == 1 {
			s.mu.Lock()
			s.queries[strings.ToLower(q.Question[0].Name)+" "+dns.TypeToString[q.Question[0].Qtype]]++
			s.mu.Unlock()
		}
		handler(w, q)
	})
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: l, Handler: h}
	var wg sync.WaitGroup
	for _, srv := range []*dns.Server{udp, tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Add(1)
		go func() { defer wg.Done(); srv.ActivateAndServe() }()
		<-started
	}
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
		wg.Wait()
	})
	return s
}

// zone answers from a fixed map of name -> records (in zone file syntax,
// without the owner), NXDOMAIN for other names.
func zone(t testing.TB, records map[string][]string) func(w dns.ResponseWriter, q *dns.Msg) {
	rrs := map[string][]dns.RR{}
	for name, lines := range records {
		for _, l := range lines {
			rr, err := dns.NewRR(dns.Fqdn(name) + " " + l)
			if err != nil {
				t.Fatalf("test zone record %q: %v", l, err)
			}
			rrs[dns.Fqdn(name)] = append(rrs[dns.Fqdn(name)], rr)
		}
	}
	return func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := strings.ToLower(q.Question[0].Name)
		list, ok := rrs[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range list {
			if rr.Header().Rrtype == q.Question[0].Qtype || rr.Header().Rrtype == dns.TypeCNAME {
				m.Answer = append(m.Answer, rr)
			}
		}
		w.WriteMsg(m)
	}
}

// silentServer is a UDP socket on loopback that never answers: a dead name
// server whose datagrams are not even refused.
func silentServer(t testing.TB) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// fakeClock is a settable clock for TTL tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newTestResolver(t testing.TB, cfg Config, servers ...netip.AddrPort) *Resolver {
	t.Helper()
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, s.String())
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second // generous: the machine may be busy; only dead servers wait for it
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// freePort returns a loopback port that was free for both UDP and TCP a
// moment ago, for daemons that bind their own sockets.
func freePort(t testing.TB) int {
	pc, l := listenUDPTCP(t)
	port := l.Addr().(*net.TCPAddr).Port
	pc.Close()
	l.Close()
	return port
}

// startDnsmasq runs dnsmasq on a free loopback port, answering only from
// hostsFile and authoritatively NXDOMAIN under localDomain; it forwards
// nowhere. It is killed when the test ends.
func startDnsmasq(t testing.TB, hostsFile, localDomain string) netip.AddrPort {
	t.Helper()
	testenv.Binary(t, "dnsmasq", "dnsmasq-base")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.StartDnsmasq(ctx, hostsFile, localDomain)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d.Addr
}

func writeHosts(t testing.TB, lines ...string) string {
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
