package communicator

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReadErrorPaused: a socket whose every read fails (here a read
// deadline in the past) had the read loop try again at once, spinning a
// core for as long as the error lasted. Reads that fail are retried after
// a pause, counted, said once; the loop reads again once the error is gone.
func TestReadErrorPaused(t *testing.T) {
	var mu sync.Mutex
	var logged [2][]string
	cl := newCluster(t, 2, func(i int, c *Config) {
		c.Logf = func(f string, a ...any) {
			mu.Lock()
			logged[i] = append(logged[i], f)
			mu.Unlock()
		}
	})
	conn := cl.eps[0].conn
	if err := conn.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "a read error", func() bool { return cl.eps[0].Stats().ReadErrors > 0 })
	time.Sleep(300 * time.Millisecond)
	// Pauses of 1, 2, 4, ... 100 ms: about a dozen in 300 ms.
	if n := cl.eps[0].Stats().ReadErrors; n > 100 {
		t.Errorf("%d failed reads in 300 ms: retried without a pause", n)
	}
	mu.Lock()
	if n := strings.Count(strings.Join(logged[0], "\n"), "reading socket"); n != 1 {
		t.Errorf("the read error logged %d times, want once: %q", n, logged[0])
	}
	mu.Unlock()
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := cl.eps[1].Send(1, 0, []byte(testURL(2, 1, 0))); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the item delivered after the error", func() bool { return cl.sinks[0].count() == 1 && cl.eps[1].Backlog(1) == 0 })

	// Close ends the read with a deadline in the past: no read error.
	if err := cl.eps[1].Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := cl.eps[1].Stats().ReadErrors; n > 0 || len(logged[1]) > 0 {
		t.Errorf("Close counted %d read errors, logged %q", n, logged[1])
	}
}
