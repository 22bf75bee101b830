package communicator

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWaitBacklogSkippedSpill: spilled items the reader finds damaged
// (the file changed after the open checked it) leave the backlog, and a
// WaitBacklog waiting for it to shrink returns then, not at the next
// acknowledgement, which a peer that is down never sends: a cluster node
// finishing its crawl waits for a backlog of 0 so.
func TestWaitBacklogSkippedSpill(t *testing.T) {
	dir, offs := spillFixture(t) // 10 items for node 2 from an earlier run
	conns, addrs := loopbackConns(t, 2)
	clock := NewManualClock(time.Unix(1700000000, 0))
	var mu sync.Mutex
	var logged []string
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir, Clock: clock,
		Logf: func(f string, a ...any) {
			mu.Lock()
			logged = append(logged, f)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if n := ep.Backlog(2); n != 10 {
		t.Fatalf("backlog %d at the start, want 10", n)
	}
	// Nothing is read before the first tick, which the manual clock
	// holds back: damage the first record now.
	path := filepath.Join(dir, "spill-1-2")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, offs[0]+recHead+3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	done := make(chan struct{})
	waited := make(chan bool, 1)
	go func() { waited <- ep.WaitBacklog(2, 0, done) }()
	deadline := time.After(10 * time.Second)
	for ep.Backlog(2) != 0 {
		clock.Advance(10 * time.Millisecond)
		select {
		case <-deadline:
			t.Fatalf("backlog still %d", ep.Backlog(2))
		case <-time.After(time.Millisecond):
		}
	}
	select {
	case ok := <-waited:
		if !ok {
			t.Fatal("WaitBacklog returned false")
		}
	case <-time.After(5 * time.Second):
		close(done)
		<-waited
		t.Fatal("WaitBacklog(2, 0) still waiting 5 s after the backlog fell to 0 (the damaged items skipped)")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) == 0 || !strings.Contains(strings.Join(logged, "\n"), "communicator") {
		t.Errorf("the skip was not logged: %q", logged)
	}
}
