package communicator

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

var testKey = Key{ID: 1, Secret: []byte("cluster secret for the tests!!")}

// sink records what a handler received.
type sink struct {
	mu    sync.Mutex
	got   map[string]int // "from tag url" -> times delivered
	total int
	lastN uint64
}

func newSink() *sink { return &sink{got: make(map[string]int)} }

func (s *sink) handle(from NodeID, n uint64, items []Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		s.got[fmt.Sprintf("%d %d %s", from, it.Tag, it.URL)]++
		s.total++
	}
	s.lastN = max(s.lastN, n)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// cluster is n endpoints on loopback.
type cluster struct {
	t     *testing.T
	addrs map[NodeID]netip.AddrPort
	eps   []*Endpoint
	sinks []*sink
}

// loopbackConns binds n UDP sockets on 127.0.0.1.
func loopbackConns(t *testing.T, n int) ([]*net.UDPConn, map[NodeID]netip.AddrPort) {
	t.Helper()
	addrs := make(map[NodeID]netip.AddrPort)
	var conns []*net.UDPConn
	for i := range n {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		addrs[NodeID(i+1)] = c.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	return conns, addrs
}

// newCluster starts n endpoints; tweak adjusts each one's config.
func newCluster(t *testing.T, n int, tweak func(i int, c *Config)) *cluster {
	t.Helper()
	conns, addrs := loopbackConns(t, n)
	cl := &cluster{t: t, addrs: addrs}
	for i := range n {
		s := newSink()
		cfg := Config{
			Self: NodeID(i + 1), Peers: addrs, Conn: conns[i], Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: s.handle, AckOnReturn: true,
			FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 200 * time.Millisecond,
		}
		if tweak != nil {
			tweak(i, &cfg)
		}
		ep, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cl.eps = append(cl.eps, ep)
		cl.sinks = append(cl.sinks, s)
	}
	t.Cleanup(func() {
		for _, ep := range cl.eps {
			ep.Close()
		}
	})
	return cl
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

func testURL(from, to NodeID, i int) string {
	return fmt.Sprintf("http://www.host%d.example/from%d/to%d/page-%d.html", i%37, from, to, i)
}
