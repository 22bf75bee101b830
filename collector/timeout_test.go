package collector

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTimeoutSaysWhich: a server silent after the request, one that
// stopped mid-response and one that trickled its response a byte at a
// time, each within the idle timeout, each end Timeout, bounded by the
// configured timeouts; the error says which timeout passed. All three
// said "i/o timeout", and an operator took the trickle for a stall.
func TestTimeoutSaysWhich(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
	for _, tc := range []struct {
		name, want string
		send       func(cs *rawConn) // before the server blocks
	}{
		{"silent", "FirstByte (300ms)", func(cs *rawConn) {}},
		{"stalled", "IdleRead (200ms)", func(cs *rawConn) { cs.bw.WriteString(head + "some") }},
		{"trickled", "ResponseTimeout (1s)", func(cs *rawConn) {
			for i := 0; i < 100; i++ { // a byte every 50 ms: 5 s in all, within IdleRead each
				cs.bw.WriteByte((head + strings.Repeat("x", 100))[i])
				if cs.bw.Flush() != nil {
					return
				}
				select {
				case <-cs.s.done:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
				tc.send(cs)
				cs.bw.Flush()
				cs.s.block()
				return false
			})
			c := rawCollector(t, Config{FirstByte: 300 * time.Millisecond, IdleRead: 200 * time.Millisecond,
				ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
			start := time.Now()
			b := c.Fetch(context.Background(), rawList(s, 1))
			defer c.Release(b)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v with a response timeout of 1s", d)
			}
			r := &b.Results[0]
			if r.Kind != Timeout || r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
				t.Errorf("%s: %s (%v); want a timeout naming %s", r.URL, r.Kind, r.Err, tc.want)
			}
		})
	}
}

// TestRequeuedAfterOurCloseSaysSo: requests pipelined behind a response
// that timed out are not answered: the collector closes the connection.
// Out of attempts, they said "the server closed the connection", and an
// operator looked for a server that hung up.
func TestRequeuedAfterOurCloseSaysSo(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		if req.URL.Path == "/p1" {
			cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome")
			cs.bw.Flush()
			cs.s.block()
			return false
		}
		cs.ok(req)
		return true
	})
	c := rawCollector(t, Config{Pipeline: 4, MaxAttempts: 1, FirstByte: time.Second, IdleRead: 200 * time.Millisecond,
		ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
	b := c.Fetch(context.Background(), rawList(s, 4))
	defer c.Release(b)
	if r := &b.Results[1]; r.Kind != Timeout {
		t.Fatalf("%s: %s (%v), want a timeout", r.URL, r.Kind, r.Err)
	}
	for _, r := range b.Results[2:] {
		if r.Attempts != 1 || r.Kind != Reset {
			t.Fatalf("%s: %s after %d attempts (%v); want unanswered, pipelined behind /p1", r.URL, r.Kind, r.Attempts, r.Err)
		}
		if r.Err == nil || strings.Contains(r.Err.Error(), "the server closed") || !strings.Contains(r.Err.Error(), "/p1") {
			t.Errorf("%s: %s (%v); want the close after /p1's timeout named", r.URL, r.Kind, r.Err)
		}
	}
}
