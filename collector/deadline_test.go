package collector

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lateCancel is a list's context past its deadline whose cancellation has
// not come yet, as when the timer of a context.WithDeadline runs late on
// a loaded machine.
type lateCancel struct {
	context.Context // cancelled some time after deadline
	deadline        time.Time
}

func (c lateCancel) Deadline() (time.Time, bool) { return c.deadline, true }

// TestNoRequestPastDeadline: a connection whose dial ended just after the
// list's deadline (a cluster node's slot guard) while the context was not
// yet cancelled carried a request: the host was asked in the next node's
// turn. No request may be written past the deadline.
func TestNoRequestPastDeadline(t *testing.T) {
	c, err := New(Config{UserAgent: testUA, Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, nil },
		FirstByte: time.Second, IdleRead: time.Second, ResponseTimeout: 2 * time.Second,
		Linger: 10 * time.Millisecond, ReconnectGap: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	var got atomic.Int64
	c.dialRaw = func(ctx context.Context) (net.Conn, error) {
		time.Sleep(time.Until(deadline) + 20*time.Millisecond) // the handshake ends late
		cl, sv := net.Pipe()
		go func() {
			defer sv.Close()
			n, _ := io.Copy(io.Discard, sv)
			got.Add(n)
		}()
		return cl, nil
	}
	inner, cancel := context.WithTimeout(context.Background(), time.Until(deadline)+500*time.Millisecond)
	defer cancel()
	l := &List{Requests: []Request{{ID: 1, URL: "http://a.test/1"}, {ID: 2, URL: "http://a.test/2"}}}
	b := c.Fetch(lateCancel{inner, deadline}, l)
	defer c.Release(b)
	time.Sleep(20 * time.Millisecond) // the server's copy ends once the pipe is closed
	if n := got.Load(); n > 0 {
		t.Errorf("%d bytes of requests sent past the list's deadline", n)
	}
	for _, r := range b.Results {
		if r.Kind != NotTried || r.Attempts != 0 {
			t.Errorf("%s: %s after %d attempts (%v); want NotTried, never sent", r.URL, r.Kind, r.Attempts, r.Err)
		}
	}
}

// TestNoRequestPastDeadlineAfterStall: fetchAll looks at the deadline
// before it builds each request, but a fetcher stalled between that look
// and the write (descheduled on a loaded machine) sent the request past
// the deadline, in the next node's slot. Nothing may be written past it,
// on its own or pipelined behind a request of its round.
func TestNoRequestPastDeadlineAfterStall(t *testing.T) {
	for _, depth := range []int{1, 3} {
		t.Run(fmt.Sprintf("pipeline=%d", depth), func(t *testing.T) {
			var mu sync.Mutex
			var arrived []time.Time
			s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
				mu.Lock()
				arrived = append(arrived, time.Now())
				mu.Unlock()
				cs.ok(req)
				return true
			})
			c := rawCollector(t, Config{Pipeline: depth})
			// The first request goes alone (a new connection does not
			// pipeline); of the next round, the first (depth 1) or the
			// last (depth 3, behind two written before the deadline)
			// stalls until past the deadline.
			stallAt := 2
			if depth > 1 {
				stallAt = 4
			}
			deadline := time.Now().Add(time.Second)
			calls := 0
			c.beforeRequest = func() {
				if calls++; calls == stallAt {
					time.Sleep(time.Until(deadline) + 20*time.Millisecond)
				}
			}
			inner, cancel := context.WithDeadline(context.Background(), deadline.Add(300*time.Millisecond)) // the late cancellation
			defer cancel()
			b := c.Fetch(lateCancel{inner, deadline}, rawList(s, 4))
			defer c.Release(b)
			if r := &b.Results[0]; r.Kind != OK {
				t.Fatalf("%s: %s (%v), want OK before the deadline", r.URL, r.Kind, r.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, at := range arrived {
				if !at.Before(deadline) {
					t.Errorf("a request arrived %v past the list's deadline", at.Sub(deadline))
				}
			}
			for _, r := range b.Results[1:] {
				if r.Kind != NotTried || r.Attempts != 0 {
					t.Errorf("%s: %s after %d attempts (%v); want NotTried, never sent", r.URL, r.Kind, r.Attempts, r.Err)
				}
			}
		})
	}
}
