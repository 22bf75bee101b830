package communicator

import (
	"encoding/binary"
	"fmt"
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
	// holds back: damage every record now (the reader skips a damaged
	// record alone: TestSpillDamagedUnderReader).
	path := filepath.Join(dir, "spill-1-2")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range offs {
		if _, err := f.WriteAt([]byte{0xff}, off+recHead+3); err != nil {
			t.Fatal(err)
		}
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

// TestBacklogUnparsableSpillItem: a spilled item record whose checksum
// holds but whose item does not parse (written under the reader after
// the open checked the file) is reported and leaves the backlog: it was
// counted once and stayed counted, so Backlog never came back to 0 and a
// node waiting for that to finish its crawl never did.
func TestBacklogUnparsableSpillItem(t *testing.T) {
	dir, offs := spillFixture(t)
	conns, addrs := loopbackConns(t, 2)
	clock := NewManualClock(time.Unix(1700000000, 0))
	var mu sync.Mutex
	var logged []string
	cfg := Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir, Clock: clock,
		FlushInterval: 5 * time.Millisecond,
		Logf: func(f string, a ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(f, a...))
			mu.Unlock()
		}}
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	// Record 0 rewritten in place: same length, a valid checksum, a tag
	// varint that never ends.
	path := filepath.Join(dir, "spill-1-2")
	b, _ := os.ReadFile(path)
	n := binary.BigEndian.Uint32(b[offs[0]:])
	pl := b[offs[0]+recHead : offs[0]+recHead+int64(n)]
	for i := 1; i < len(pl); i++ {
		pl[i] = 0x80
	}
	binary.BigEndian.PutUint32(b[offs[0]+4:], recSum(spillVersion, offs[0], pl))
	os.WriteFile(path, b, 0o644)

	s2 := newSink()
	rcfg := cfg
	rcfg.Self, rcfg.Conn, rcfg.SpillDir, rcfg.Handler, rcfg.Logf = 2, conns[1], "", s2.handle, nil
	rcfg.Clock = nil
	recv, err := New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	deadline := time.Now().Add(10 * time.Second)
	for s2.count() < 9 || ep.Backlog(2) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 9 intact items delivered, backlog %d, want 0", s2.count(), ep.Backlog(2))
		}
		clock.Advance(50 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logged, "\n"), fmt.Sprintf("at offset %d", offs[0])) {
		t.Errorf("the unparsable item was not reported with its offset: %q", logged)
	}
}

// TestCloseSpillWriteFails: Close with the spill file failing every write
// (a full disk; here its descriptor closed under it) returned at the
// first failed write with only that error: the file left open, the rest
// of the queue not even tried, and nothing said of how many items were
// lost. Now every item is tried, the file closed, and the error counts
// the items that did not reach the file.
func TestCloseSpillWriteFails(t *testing.T) {
	conns, addrs := loopbackConns(t, 2) // node 2's socket never answers
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: t.TempDir(), SentCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	const sent = 200
	for k := range sent {
		if err := ep.Send(2, 0, []byte(fmt.Sprintf("http://a.example/%d/%s", k, strings.Repeat("p", 600)))); err != nil {
			t.Fatal(err)
		}
	}
	ep.Flush()
	p := ep.peers[2]
	p.mu.Lock()
	p.spill.f.Close()
	p.mu.Unlock()
	err = ep.Close()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("up to %d items for it did not reach spill file", sent)) {
		t.Fatalf("Close: %v; want it to say the %d items did not reach the spill file", err, sent)
	}
}
