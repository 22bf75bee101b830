package collector

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedServer answers GETs on loopback with "ok"; on the connections
// listed in dropSecond it closes instead of answering its second request
// (as a server that closed an idle connection just as a request came).
type scriptedServer struct {
	ln         net.Listener
	dropSecond map[int]bool
	mu         sync.Mutex
	accepted   int
	ended      int         // connections closed
	endedAt    map[int]int // ended as each connection was accepted
	closed     chan int    // connection numbers, as each ends
	wg         sync.WaitGroup
}

func startScripted(t *testing.T, dropSecond ...int) *scriptedServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedServer{ln: ln, dropSecond: map[int]bool{}, endedAt: map[int]int{}, closed: make(chan int, 16)}
	for _, n := range dropSecond {
		s.dropSecond[n] = true
	}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted++
			n := s.accepted
			s.endedAt[n] = s.ended
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(n, c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *scriptedServer) serve(n int, c net.Conn) {
	defer func() {
		s.mu.Lock()
		s.ended++ // before the close: the client may see it at once
		s.mu.Unlock()
		c.Close()
		s.closed <- n
	}()
	br := bufio.NewReader(c)
	for req := 1; ; req++ {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for { // the header block
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if h == "\r\n" {
				break
			}
		}
		if req == 2 && s.dropSecond[n] {
			return
		}
		if !strings.HasPrefix(line, "GET ") {
			return
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
	}
}

func (s *scriptedServer) conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func idleCollector(t *testing.T, s *scriptedServer) (*Collector, string) {
	t.Helper()
	return idleCollectorCfg(t, s, Config{})
}

// idleCollectorCfg is idleCollector with cfg's other fields: every host
// name is the server's address.
func idleCollectorCfg(t *testing.T, s *scriptedServer, cfg Config) (*Collector, string) {
	t.Helper()
	cfg.UserAgent, cfg.KeepIdle = testUA, time.Minute
	cfg.Lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, fmt.Sprintf("http://keep.test:%d/", s.ln.Addr().(*net.TCPAddr).Port)
}

func fetchOne(t *testing.T, c *Collector, u string) *Batch {
	t.Helper()
	b := c.Fetch(context.Background(), listOf([]string{u}))
	if r := &b.Results[0]; r.Kind != OK || string(r.Body) != "ok" {
		t.Fatalf("%s: %v (%v), body %q", u, r.Kind, r.Err, r.Body)
	}
	return b
}

// TestKeepIdleReuses: consecutive lists of one origin share one
// connection, and CloseIdle closes it.
func TestKeepIdleReuses(t *testing.T) {
	s := startScripted(t)
	c, base := idleCollector(t, s)
	for i := range 3 {
		fetchOne(t, c, base+fmt.Sprint(i))
	}
	if n := s.conns(); n != 1 {
		t.Errorf("%d connections for 3 lists of one origin, want 1", n)
	}
	c.CloseIdle()
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("CloseIdle left the connection open")
	}
}

// TestKeepIdleUntilDeadline: a connection is kept no longer than its
// list's context allowed (a cluster node's slot ends there): a list within
// it reuses the connection, and it is closed at the deadline, not KeepIdle
// (a minute) later.
func TestKeepIdleUntilDeadline(t *testing.T) {
	s := startScripted(t)
	c, base := idleCollector(t, s)
	d := time.Now().Add(2 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), d)
	defer cancel()
	for i := range 2 {
		b := c.Fetch(ctx, listOf([]string{base + fmt.Sprint(i)}))
		if r := &b.Results[0]; r.Kind != OK {
			t.Fatalf("list %d: %v (%v)", i, r.Kind, r.Err)
		}
	}
	if n := s.conns(); n != 1 {
		t.Errorf("%d connections for 2 lists within the deadline, want 1", n)
	}
	select {
	case <-s.closed:
		if time.Now().Before(d) {
			t.Errorf("the kept connection was closed before its list's deadline")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the kept connection outlived its list's deadline by 30 s")
	}
	c.CloseIdle()
}

// TestKeepIdleStale: a kept connection the server closes as the next
// list's request comes costs that request no attempt: it is asked again on
// a new connection.
func TestKeepIdleStale(t *testing.T) {
	s := startScripted(t, 1)
	c, base := idleCollector(t, s)
	fetchOne(t, c, base+"a")
	b := fetchOne(t, c, base+"b")
	if r := &b.Results[0]; r.Attempts != 1 {
		t.Errorf("attempts %d, want 1 (the send on the stale connection not counted)", r.Attempts)
	}
	if n := s.conns(); n != 2 || b.Connections != 2 {
		t.Errorf("server saw %d connections, the list used %d; want 2 and 2", n, b.Connections)
	}
	c.CloseIdle()
}

// TestKeepIdleServerClosed: a kept connection the server closed while it
// was idle is not used (or, if its close comes late, used as a stale one).
func TestKeepIdleServerClosed(t *testing.T) {
	s := startScripted(t, 1)
	c, base := idleCollector(t, s)
	fetchOne(t, c, base+"a")
	// Connection 1, kept, is closed by the server at its second request:
	// send one on it behind the collector's back, and wait for the close.
	c.kept.mu.Lock()
	ic := c.kept.conns["keep.test"]
	c.kept.mu.Unlock()
	if ic == nil {
		t.Fatal("no kept connection after a clean list")
	}
	if _, err := ic.c.raw.Write([]byte("GET /x HTTP/1.1\r\nHost: keep.test\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not close")
	}
	b := fetchOne(t, c, base+"b")
	if r := &b.Results[0]; r.Attempts != 1 {
		t.Errorf("attempts %d, want 1", r.Attempts)
	}
	if n := s.conns(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
	c.CloseIdle()
}

// TestKeepPerAddr: with KeepPerAddr, a list that dials an address first
// closes what is kept there for another host (the server has seen it
// closed when the new connection comes); without, both stay open.
func TestKeepPerAddr(t *testing.T) {
	for _, perAddr := range []bool{false, true} {
		s := startScripted(t)
		c, base := idleCollectorCfg(t, s, Config{KeepPerAddr: perAddr})
		fetchOne(t, c, base+"a")
		other := strings.Replace(base, "keep.test", "other.test", 1)
		fetchOne(t, c, other+"b")
		s.mu.Lock()
		ended := s.endedAt[2]
		s.mu.Unlock()
		if want := map[bool]int{false: 0, true: 1}[perAddr]; ended != want {
			t.Errorf("KeepPerAddr %v: %d connections closed when the other host's opened, want %d", perAddr, ended, want)
		}
		// The other host's connection is kept in turn; the first host's
		// next list dials again and closes it first.
		fetchOne(t, c, base+"c")
		if n := s.conns(); n != 3 && perAddr {
			t.Errorf("%d connections, want 3", n)
		}
		c.CloseIdle()
	}
}
