package collector

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCancel cuts a list short while a response is awaited: the URLs not
// answered come back not-tried, quickly.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		if req.URL.Path == "/p3" {
			cancel()
			cs.bw.Flush()
			cs.s.block() // the client must not wait for it
			return false
		}
		cs.ok(req)
		return true
	})
	c := rawCollector(t, Config{})
	start := time.Now()
	b := c.Fetch(ctx, rawList(s, 8))
	defer c.Release(b)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancel took %v", d)
	}
	checkBodies(t, b, 3, 4, 5, 6, 7)
	for _, r := range b.Results[3:] {
		if r.Kind != NotTried {
			t.Errorf("%s: %s, want not-tried", r.URL, r.Kind)
		}
	}
	// A cancelled context before a fetcher is free: nothing is tried.
	b2 := c.Fetch(ctx, rawList(s, 2))
	for _, r := range b2.Results {
		if r.Kind != NotTried {
			t.Errorf("%s: %s after cancel", r.URL, r.Kind)
		}
	}
}

// TestPoolBound runs more lists than fetchers and checks that no more than
// Fetchers connections are ever open at once, and every list completes.
func TestPoolBound(t *testing.T) {
	var open, most atomic.Int32
	var servers []*rawServer
	for range 6 {
		servers = append(servers, startRaw(t, func(cs *rawConn, req *http.Request) bool {
			if cs.n == 1 {
				n := open.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
			}
			cs.ok(req)
			if req.URL.Path == "/p4" {
				open.Add(-1)
				return false
			}
			return true
		}))
	}
	c := rawCollector(t, Config{Fetchers: 2})
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			b := c.Fetch(context.Background(), rawList(s, 5))
			defer c.Release(b)
			checkBodies(t, b)
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Errorf("%d connections at once with 2 fetchers", m)
	}
}

// TestStop ends a list gently while a response is awaited: that response
// is still read, nothing more is sent, the rest come back not-tried.
func TestStop(t *testing.T) {
	stop := make(chan struct{})
	var sent atomic.Int32
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		sent.Add(1)
		if req.URL.Path == "/p3" {
			close(stop)
		}
		cs.ok(req)
		return true
	})
	c := rawCollector(t, Config{})
	l := rawList(s, 8)
	l.Stop = stop
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	checkBodies(t, b, 4, 5, 6, 7)
	for _, r := range b.Results[4:] {
		if r.Kind != NotTried || r.Attempts != 0 {
			t.Errorf("%s: %s after %d attempts, want not-tried, never sent", r.URL, r.Kind, r.Attempts)
		}
	}
	if n := sent.Load(); n != 4 {
		t.Errorf("the server saw %d requests, want 4", n)
	}
}
