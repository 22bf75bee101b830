package spider

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestConnGate checks that a host's second connection is dialled only after
// the first one closed and the gap passed, and that the gate forgets a host
// once its gap has passed with nothing open.
func TestConnGate(t *testing.T) {
	const gap = 50 * time.Millisecond
	g := &connGate{gap: gap, hosts: map[string]*hostConns{}}
	dial := g.wrap(func(context.Context, string, string) (net.Conn, error) {
		c, _ := net.Pipe()
		return c, nil
	})
	ctx := context.Background()
	first, err := dial(ctx, "tcp", "a.test:80")
	if err != nil {
		t.Fatal(err)
	}
	other, err := dial(ctx, "tcp", "b.test:80") // another host does not wait
	if err != nil {
		t.Fatal(err)
	}
	other.Close()

	dialled := make(chan time.Time, 1)
	go func() {
		c, err := dial(ctx, "tcp", "a.test:80")
		if err != nil {
			t.Error(err)
			return
		}
		dialled <- time.Now()
		c.Close()
	}()
	select {
	case <-dialled:
		t.Fatal("second connection dialled while the first was open")
	case <-time.After(2 * gap):
	}
	closed := time.Now()
	first.Close()
	first.Close() // a second Close must not release twice
	if at := <-dialled; at.Sub(closed) < gap {
		t.Errorf("second connection dialled %v after the first closed, want at least %v", at.Sub(closed), gap)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	g.mu.Lock()
	g.hosts["c.test:80"] = &hostConns{open: 1, changed: make(chan struct{})}
	g.mu.Unlock()
	if _, err := dial(cancelled, "tcp", "c.test:80"); err == nil {
		t.Error("dial with a cancelled context while the host is busy: no error")
	}
	g.mu.Lock()
	delete(g.hosts, "c.test:80")
	g.mu.Unlock()

	deadline := time.Now().Add(5 * time.Second)
	for {
		g.mu.Lock()
		n := len(g.hosts)
		g.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gate still holds %d hosts long after their gap", n)
		}
		time.Sleep(gap / 5)
	}
}
