package collector

import (
	"context"
	"io"
	"net"
	"net/netip"
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
