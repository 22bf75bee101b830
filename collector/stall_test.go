package collector

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStallAfterFirstResponse: a host that answers each connection's first
// request at once and stalls the next response, within ResponseTimeout
// each time, cost its list a timeout and a linger per two URLs (20 URLs ×
// 60 s / 2: ten minutes a list with the defaults), each connection's good
// first response clearing the count of connections given up on. A
// response that times out now ends the list: the rest come back unsent,
// for the node to list again (NotTried, no retry spent).
func TestStallAfterFirstResponse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall func(cs *rawConn)
	}{
		{"silent", func(cs *rawConn) {}},
		{"mid-body", func(cs *rawConn) { cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome") }},
	} {
		for _, depth := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/pipeline=%d", tc.name, depth), func(t *testing.T) {
				s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
					if cs.n == 1 {
						cs.ok(req)
						return true
					}
					tc.stall(cs)
					cs.bw.Flush()
					cs.s.block()
					return false
				})
				c := rawCollector(t, Config{Pipeline: depth, FirstByte: 300 * time.Millisecond, IdleRead: 200 * time.Millisecond,
					ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
				b := c.Fetch(context.Background(), rawList(s, 20))
				defer c.Release(b)
				conns, _, hits := s.stats()
				if conns != 1 || b.Connections != 1 {
					t.Errorf("%d connections (the server saw %d) to a host that stalls each second response, want 1", b.Connections, conns)
				}
				if len(hits) != 2 || hits["/p0"] != 1 || hits["/p1"] != 1 {
					t.Errorf("the server read %v, want /p0 and /p1 once each", hits)
				}
				checkBodies(t, b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
				if r := &b.Results[1]; r.Kind != Timeout || r.Attempts != 1 {
					t.Errorf("%s: %s (%v) after %d attempts, want a timeout, sent once", r.URL, r.Kind, r.Err, r.Attempts)
				}
				for i := 2; i < len(b.Results); i++ {
					r := &b.Results[i]
					if r.Status != 0 || r.Kind == OK || r.Err == nil {
						t.Errorf("%s: status %d, %s (%v), want no response and why", r.URL, r.Status, r.Kind, r.Err)
						continue
					}
					if r.Attempts == 0 {
						continue // never sent: the node lists it again (NotTried)
					}
					// Pipelined behind /p1: sent, unanswered as the
					// collector closed the connection.
					if depth == 1 || r.Attempts != 1 || !strings.Contains(r.Err.Error(), "/p1") {
						t.Errorf("%s: %s (%v) after %d attempts; want unsent, or sent once behind /p1, which it names", r.URL, r.Kind, r.Err, r.Attempts)
					}
				}
			})
		}
	}
}

// TestStallEndsList: a host silent after each request (until the
// first-byte timeout) or whose every response stalls after its head (a
// slowloris body) held a fetcher for a timeout and a linger per URL, 20
// minutes for a list of 20 with the defaults; then for two of them. The
// first response that times out now ends the list, the rest unsent.
func TestStallEndsList(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		stall      func(cs *rawConn)
	}{
		{"silent", "", func(cs *rawConn) {}},
		{"mid-body", "some", func(cs *rawConn) { cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
				tc.stall(cs)
				cs.bw.Flush()
				cs.s.block()
				return false
			})
			c := rawCollector(t, Config{FirstByte: 300 * time.Millisecond, IdleRead: 100 * time.Millisecond,
				ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
			b := c.Fetch(context.Background(), rawList(s, 20))
			defer c.Release(b)
			if conns, _, hits := s.stats(); conns != 1 || b.Connections != 1 || len(hits) != 1 {
				t.Errorf("%d connections (the server saw %d, read %v) to a host whose every response stalls, want 1, /p0", b.Connections, conns, hits)
			}
			for i := range b.Results {
				r := &b.Results[i]
				if r.Kind != Timeout || r.Err == nil {
					t.Errorf("%s: %s (%v), want timeout", r.URL, r.Kind, r.Err)
				}
				if i == 0 && (r.Short != (tc.body != "") || string(r.Body) != tc.body || r.Attempts != 1) {
					t.Errorf("%s: short %v, body %q after %d attempts; want %q, sent once", r.URL, r.Short, r.Body, r.Attempts, tc.body)
				}
				if i > 0 && (r.Attempts != 0 || r.Status != 0) {
					t.Errorf("%s: status %d after %d attempts, want unsent", r.URL, r.Status, r.Attempts)
				}
			}
		})
	}
}
