package collector

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestBarrenConnections: a host whose every connection fails before its
// first response — silent until the first-byte timeout, or answering
// bytes that are not HTTP and then holding the connection — ends the list
// after two connections, as one that hangs up does. Each URL of a list of
// 20 cost a connection, a timeout and a linger (20 × 32 s with the
// defaults); the rest now come back unsent, with the last failure.
func TestBarrenConnections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(cs *rawConn, req *http.Request) bool
		kind   Kind
	}{
		{"silent", func(cs *rawConn, req *http.Request) bool { cs.s.block(); return false }, Timeout},
		{"garbage", func(cs *rawConn, req *http.Request) bool {
			cs.bw.WriteString("SSH-2.0-OpenSSH_9.2\r\n\r\n")
			cs.bw.Flush()
			cs.s.block()
			return false
		}, BadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, tc.handle)
			c := rawCollector(t, Config{FirstByte: 200 * time.Millisecond, IdleRead: 200 * time.Millisecond,
				ResponseTimeout: time.Second, Linger: 100 * time.Millisecond})
			b := c.Fetch(context.Background(), rawList(s, 20))
			defer c.Release(b)
			if conns, _, _ := s.stats(); conns > 2 || b.Connections > 2 {
				t.Errorf("%d connections (the server saw %d) to a host that answers nothing, want 2", b.Connections, conns)
			}
			for i := range b.Results {
				r := &b.Results[i]
				if r.Kind != tc.kind || r.Err == nil {
					t.Errorf("%s: %s (%v), want %s", r.URL, r.Kind, r.Err, tc.kind)
				}
				if want := min(1, max(0, 2-i)); r.Attempts != want {
					t.Errorf("%s: sent %d times, want %d", r.URL, r.Attempts, want)
				}
			}
		})
	}
}

// TestStalledConnections: a host whose every response stalls after its
// head (a slowloris body) held a fetcher for the whole-response timeout
// and a linger per URL, one connection each: 20 minutes for a list of 20
// with the defaults. Two connections in a row whose first response
// stalled now end the list, as two that answered nothing do.
func TestStalledConnections(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome")
		cs.bw.Flush()
		cs.s.block()
		return false
	})
	c := rawCollector(t, Config{FirstByte: time.Second, IdleRead: 100 * time.Millisecond,
		ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
	b := c.Fetch(context.Background(), rawList(s, 20))
	defer c.Release(b)
	if conns, _, _ := s.stats(); conns > 2 || b.Connections > 2 {
		t.Errorf("%d connections (the server saw %d) to a host whose every response stalls, want 2", b.Connections, conns)
	}
	for i := range b.Results {
		r := &b.Results[i]
		if r.Kind != Timeout || r.Err == nil {
			t.Errorf("%s: %s (%v), want timeout", r.URL, r.Kind, r.Err)
		}
		if i < 2 && (!r.Short || string(r.Body) != "some" || r.Attempts != 1) {
			t.Errorf("%s: short %v, body %q after %d attempts; want the start of the body, sent once", r.URL, r.Short, r.Body, r.Attempts)
		}
		if i >= 2 && (r.Attempts != 0 || r.Status != 0) {
			t.Errorf("%s: status %d after %d attempts, want unsent", r.URL, r.Status, r.Attempts)
		}
	}
}
