package collector

import (
	"context"
	"net/http"
	"testing"
)

// TestStopAfterRecoveredFailure: a list stopped (List.Stop) after a
// failure it recovered from gave the URLs it never sent, or sent and was
// still to send again, that old failure, where a list stopped without one
// gives them NotTried: a node counted a URL sent once on a connection that
// died, and not yet sent again, a failed fetch (a retry spent) only when
// some earlier connection of its list had failed too.
func TestStopAfterRecoveredFailure(t *testing.T) {
	t.Run("unsent", func(t *testing.T) {
		// The first connection hangs up unanswered; the second answers
		// /p0, and the list is stopped in its Each.
		s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
			if cs.id == 1 {
				return false
			}
			cs.ok(req)
			return true
		})
		c := rawCollector(t, Config{})
		stop := make(chan struct{})
		l := rawList(s, 4)
		l.Stop = stop
		l.Each = func(r *Result) {
			if r.Kind == OK {
				close(stop)
			}
		}
		b := c.Fetch(context.Background(), l)
		defer c.Release(b)
		checkBodies(t, b, 1, 2, 3)
		for _, r := range b.Results[1:] {
			if r.Kind != NotTried || r.Err != nil || r.Attempts != 0 {
				t.Errorf("%s: %s (%v), %d attempts; want not-tried, never sent", r.URL, r.Kind, r.Err, r.Attempts)
			}
		}
	})
	t.Run("to be sent again", func(t *testing.T) {
		// The list is stopped while /p0 is out on a connection that then
		// hangs up: /p0 would be sent again, but the list stops first.
		stop := make(chan struct{})
		s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
			close(stop)
			return false
		})
		c := rawCollector(t, Config{})
		l := rawList(s, 2)
		l.Stop = stop
		b := c.Fetch(context.Background(), l)
		defer c.Release(b)
		if conns, _, _ := s.stats(); conns != 1 {
			t.Errorf("%d connections, want 1", conns)
		}
		for _, r := range b.Results {
			if r.Kind != NotTried || r.Err != nil {
				t.Errorf("%s: %s (%v), %d attempts; want not-tried", r.URL, r.Kind, r.Err, r.Attempts)
			}
		}
	})
}
