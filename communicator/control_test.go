package communicator

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
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
