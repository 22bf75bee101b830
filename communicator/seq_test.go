package communicator

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSeqExhausted: a start that has numbered the last batch it may send
// a peer (maxSeq) sends nothing more to it, and says so (the log, once;
// PeerStats.Exhausted): before, its items just waited in the queue, the
// peer shown neither down nor slow, and the cluster never finished.
func TestSeqExhausted(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		}
	})
	ep := cl.eps[0]
	p := ep.peers[2]
	p.mu.Lock()
	p.seq, p.base = maxSeq-3, maxSeq-2 // three batches left
	p.mu.Unlock()
	long := strings.Repeat("x", 900) // one item a datagram
	for k := range 10 {
		if err := ep.Send(2, 0, []byte(fmt.Sprintf("http://a.example/%d/%s", k, long))); err != nil {
			t.Fatal(err)
		}
	}
	ep.Flush()
	waitUntil(t, 10*time.Second, "3 items delivered and acknowledged", func() bool {
		return cl.sinks[1].count() == 3 && ep.Backlog(2) == 7
	})
	waitUntil(t, 10*time.Second, "the exhaustion reported", func() bool {
		return ep.Stats().Peers[0].Exhausted
	})
	ep.Flush()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "node 2: this start has numbered all") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("exhaustion logged %d times, want once: %q", n, logs)
	}
	if c := cl.sinks[1].count(); c != 3 {
		t.Errorf("%d items delivered past the last sequence number", c)
	}
}
