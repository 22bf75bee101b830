package communicator

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestControlItemsCounted: the items waiting for a peer that is down are
// counted apart when they are control items (Config.ControlTag), in the
// memory queue, in flight and in the spill file, across a restart that
// reads them back from a damaged spill file, down to none once the peer
// has them all. A cluster node's "URLs wait" is the backlog less these:
// it counted a peer's hellos as URLs, "3 URLs wait" for a peer that was
// sent none.
func TestControlItemsCounted(t *testing.T) {
	const controlTag = 1 << 20
	for _, tc := range []struct {
		name       string
		queueBytes int
	}{{"memory queue", 0}, {"spilled", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			conns, addrs := loopbackConns(t, 2)
			dir := t.TempDir()
			cfg := func(conn *net.UDPConn) Config {
				return Config{Self: 1, Peers: addrs, Conn: conn, Keys: []Key{testKey}, SendKey: testKey.ID,
					Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir,
					QueueBytes: tc.queueBytes, ControlTag: controlTag,
					FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond}
			}
			a, err := New(cfg(conns[0]))
			if err != nil {
				t.Fatal(err)
			}
			// Node 2's socket is bound but nobody reads it: down.
			waiting := func(ep *Endpoint) (items, control int) {
				p := ep.Stats().Peers[0]
				return p.Queued + p.UnackedItems + int(p.SpillItems), p.ControlItems
			}
			const hellos, urls = 3, 200
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
			// Batches leave, are retransmitted, none acknowledged: the
			// counts stay what was sent, wherever the items are.
			for range 50 {
				if n, c := waiting(a); n != hellos+urls || c != hellos {
					t.Fatalf("%d items wait, %d of them control; want %d, %d", n, c, hellos+urls, hellos)
				}
				if p := a.Stats().Peers[0]; p.SpillControlItems > int64(p.ControlItems) || p.SpillControlItems > p.SpillItems {
					t.Fatalf("%d control items in the spill file, of %d there and %d control in all", p.SpillControlItems, p.SpillItems, p.ControlItems)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}

			// Damage the spill file at a random place: what the next
			// start counts is what it delivers, control items apart.
			path := filepath.Join(dir, "spill-1-2")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			off := spillHeader + rand.IntN(len(b)-spillHeader)
			b[off] ^= 0x5a
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[1]))
			if err != nil {
				t.Fatal(err)
			}
			a, err = New(cfg(conn))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			items, control := waiting(a)
			if items > hellos+urls || control > hellos || control > items {
				t.Fatalf("after the restart: %d items wait, %d of them control; sent %d, %d", items, control, hellos+urls, hellos)
			}

			// Node 2 comes up: it gets what was counted, and nothing
			// waits.
			s := newSink()
			gotControl := 0
			bEp, err := New(Config{Self: 2, Peers: addrs, Conn: conns[1], Keys: []Key{testKey}, SendKey: testKey.ID,
				Handler: func(from NodeID, n uint64, its []Item) {
					for _, it := range its {
						if it.Tag >= controlTag {
							s.mu.Lock()
							gotControl++
							s.mu.Unlock()
						}
					}
					s.handle(from, n, its)
				}, AckOnReturn: true})
			if err != nil {
				t.Fatal(err)
			}
			defer bEp.Close()
			waitUntil(t, 20*time.Second, "the backlog delivered", func() bool {
				n, c := waiting(a)
				return n == 0 && c == 0
			})
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.total != items || gotControl != control {
				t.Errorf("node 2 got %d items, %d of them control; the restart counted %d, %d (damage at offset %d)", s.total, gotControl, items, control, off)
			}
		})
	}
}

// TestControlItemsJumpTheQueue: a control item (a node's hello) sent
// behind a spill file of URLs reached the peer after all of them, and a
// cluster node holds a peer's URLs until it hears its hello (at most 64
// batches, then takes them unchecked); now control items leave ahead of
// what was queued and spilled before them, in batches of their own, and
// everything still arrives, the spill file emptied. One that cannot leave
// before Close (the window full) is saved in the spill file.
func TestControlItemsJumpTheQueue(t *testing.T) {
	const controlTag = 1 << 20
	conns, addrs := loopbackConns(t, 2)
	dir := t.TempDir()
	a, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir, QueueBytes: 1, ControlTag: controlTag,
		FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Node 2's socket is bound but nobody reads it yet.
	const urls = 3000
	for i := range urls {
		if err := a.Send(2, 0, []byte(testURL(1, 2, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Send(2, controlTag, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls, helloAt, got := 0, 0, 0
	b, err := New(Config{Self: 2, Peers: addrs, Conn: conns[1], Keys: []Key{testKey}, SendKey: testKey.ID, AckOnReturn: true,
		Handler: func(_ NodeID, _ uint64, items []Item) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			for _, it := range items {
				if it.Tag == controlTag {
					helloAt = calls
				} else {
					got++
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitUntil(t, 30*time.Second, "every item delivered and acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return helloAt > 0 && got >= urls && a.Backlog(2) == 0
	})
	mu.Lock()
	if helloAt > 3 {
		t.Errorf("the control item came with delivery %d of %d, behind the URLs spilled before it", helloAt, calls)
	}
	mu.Unlock()
	waitUntil(t, 10*time.Second, "the spill file emptied", func() bool { return a.Stats().Peers[0].SpillBytes == spillHeader })
	b.Close()

	// Node 2 gone: what was sent waits unacknowledged, and Close keeps
	// it for the next start.
	for i := range 3 {
		a.Send(2, 0, []byte(testURL(1, 2, urls+i))) // not sent before: the sent-URL cache would drop it
	}
	a.Send(2, controlTag, []byte("hello again"))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// The next start, with a window of one batch: the file's items in
	// flight, a control item sent meanwhile waits for room; Close keeps
	// it too.
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[1]))
	if err != nil {
		t.Fatal(err)
	}
	a, err = New(Config{Self: 1, Peers: addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir, QueueBytes: 1, ControlTag: controlTag, Window: 1,
		FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the file's items in flight", func() bool { return a.Stats().Peers[0].UnackedItems == 4 })
	a.Send(2, controlTag, []byte("hello once more"))
	if p := a.Stats().Peers[0]; p.Queued != 1 || p.ControlItems != 2 {
		t.Fatalf("the control item sent while the window is full: %d queued, %d control items wait; want 1, 2", p.Queued, p.ControlItems)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := openSpill(dir, 1, 2, 1000, controlTag)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.unreadControl != 2 || s.unreadItems != 5 {
		t.Fatalf("after Close the spill file holds %d items, %d of them control; want 5, 2", s.unreadItems, s.unreadControl)
	}
}
