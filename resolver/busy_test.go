package resolver

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// TestQueryIDsExhausted: a query drew random ids until one was free of
// its socket's pending queries, under the socket's lock, so with all
// 65,536 taken (a flood of lookups against a silent server) the draw never
// ended and every lookup through that socket hung with it. Now a socket
// takes at most half the id space in flight, and a query past that on
// every socket fails at once, naming the name, without marking the server
// down.
func TestQueryIDsExhausted(t *testing.T) {
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0") // never read
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	r, err := New(Config{Servers: []string{silent.LocalAddr().String()}, Sockets: 1, Timeout: time.Second, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := r.tr.socks[0]
	s.mu.Lock()
	for id := range 1 << 16 {
		s.pending[uint16(id)] = &pendingQuery{}
	}
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := r.Lookup(ctx, "busy.test")
		done <- err
	}()
	select {
	case err := <-done:
		var le *LookupError
		if !errors.As(err, &le) || le.Name != "busy.test" || !strings.Contains(err.Error(), "in flight") {
			t.Errorf("a lookup with every query id in flight: %v, want an error naming busy.test and the queries in flight", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a lookup with every query id in flight still hangs after 20 s")
	}
	if r.ServerDown(0) {
		t.Error("the server was marked down for the resolver's own queries in flight")
	}
}
