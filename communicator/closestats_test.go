package communicator

import (
	"fmt"
	"testing"
	"time"
)

// TestStatsAfterClose: Close writes the batches in flight from memory to
// the spill file; the stats read after it (a node's summary, "node 2 is
// down: N URLs wait for it", is printed after its Close) counted those
// items twice, in flight and in the file.
func TestStatsAfterClose(t *testing.T) {
	const controlTag = 1 << 20
	conns, addrs := loopbackConns(t, 2)
	a, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: t.TempDir(), ControlTag: controlTag,
		FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Node 2's socket is bound but nobody reads it: down.
	const hellos, urls = 2, 300
	for i := range hellos {
		if err := a.Send(2, controlTag+uint64(i), fmt.Appendf(nil, "hello %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range urls {
		if err := a.Send(2, uint64(i%3), []byte(testURL(1, 2, i))); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, "a batch in flight", func() bool { return a.Stats().Peers[0].UnackedItems > 0 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	p := a.Stats().Peers[0]
	if n := p.Queued + p.UnackedItems + int(p.SpillItems); n != hellos+urls || p.ControlItems != hellos {
		t.Errorf("after Close %d items wait (%d queued, %d in flight, %d in the spill file), %d of them control; sent %d, %d",
			n, p.Queued, p.UnackedItems, p.SpillItems, p.ControlItems, hellos+urls, hellos)
	}
	if n := a.Backlog(2); n != hellos+urls {
		t.Errorf("Backlog after Close %d; sent %d", n, hellos+urls)
	}
}
