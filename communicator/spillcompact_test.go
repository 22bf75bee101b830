package communicator

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSpillCompactedUnderTraffic: a node that spills every item it sends
// (QueueBytes 1, as a cluster node does) under steady traffic never found
// its spill file all acknowledged at an upkeep, so the file kept every
// item sent (the next start scanning them all); now the acknowledged part
// is cut off once it is large, and every item still arrives, across a
// restart of the sender in the middle too.
func TestSpillCompactedUnderTraffic(t *testing.T) {
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 2)
	recv := newSink()
	mk := func(self NodeID, c *net.UDPConn, h Handler, spill string) *Endpoint {
		ep, err := New(Config{Self: self, Peers: addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: h, AckOnReturn: true, SpillDir: spill, QueueBytes: 1, SentCache: -1,
			Lazy: true, SpillUpkeepEvery: 50 * time.Millisecond, // a cluster node's way, faster
			FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	b := mk(2, conns[1], recv.handle, "")
	defer b.Close()
	sender := func(c *net.UDPConn) *Endpoint {
		ep := mk(1, c, func(NodeID, uint64, []Item) {}, dir)
		p := ep.peers[2]
		p.mu.Lock()
		p.spill.compactAt = 8 << 10
		p.mu.Unlock()
		return ep
	}
	a := sender(conns[0])
	const total = 10000
	maxSize := int64(0)
	deadline := time.Now().Add(30 * time.Second)
	for k := 0; k < total; {
		for range 20 {
			if err := a.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
				t.Fatal(err)
			}
			k++
		}
		if err := a.Sync(); err != nil {
			t.Fatal(err)
		}
		if k == total/2 {
			addr := a.Addr()
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
			if err != nil {
				t.Fatal(err)
			}
			a = sender(c)
		}
		time.Sleep(time.Millisecond)
		maxSize = max(maxSize, a.Stats().Peers[0].SpillBytes)
		if time.Now().After(deadline) {
			t.Fatal("sending took more than 30 s")
		}
	}
	defer a.Close()
	waitUntil(t, 30*time.Second, "every item delivered", func() bool { return a.Backlog(2) == 0 })
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for k := range total {
		if recv.got[fmt.Sprintf("1 0 %s", testURL(1, 2, k))] == 0 {
			t.Fatalf("item %d never delivered (%d distinct of %d)", k, len(recv.got), total)
		}
	}
	// About 80 bytes an item: without compaction the file held them all.
	if maxSize > 100<<10 {
		t.Errorf("the spill file reached %d bytes for %d items", maxSize, total)
	}
	t.Logf("spill file at most %d bytes for %d items", maxSize, total)
}

// TestSpillCompactOverDamage: a damaged record found at the open, after
// the point the file is rewritten from, keeps being jumped over at its
// new offset, in this run and the next; marks copied with it are
// rewritten to acknowledge nothing.
func TestSpillCompactOverDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 60 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
		if k == 52 {
			s.mark(spillHeader, false) // a mark to be copied (a no-op value)
			s.mark(offs[2], false)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	path := spillPath(dir, 1, 2)
	b, _ := os.ReadFile(path)
	b[offs[55]+recHead+4] ^= 0x20 // item 55 damaged
	os.WriteFile(path, b, 0o644)
	if s, err = openSpill(dir, 1, 2, 1000); err != nil {
		t.Fatal(err)
	}
	s.compactAt = 1
	read := func(limit int) []string {
		var q queue
		if err := s.readChunk(&q, limit); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range q.items[q.head:] {
			got = append(got, string(q.bytesOf(it)))
		}
		return got
	}
	var got []string
	for len(got) < 48 {
		got = append(got, read(1)...)
	}
	at := s.readOff
	gone, err := s.compact(at)
	if err != nil || gone != at-spillHeader {
		t.Fatalf("compact at %d: moved %d, %v", at, gone, err)
	}
	for s.unread() {
		got = append(got, read(4096)...)
	}
	check := func(run string, got []string, from int) {
		t.Helper()
		var want []string
		for k := from; k < 60; k++ {
			if k != 55 {
				want = append(want, testURL(1, 2, k))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: read %d items, want items %d-59 but 55 (%d)", run, len(got), from, len(want))
		}
	}
	check("this run", got, 2)
	s.close()
	// The next start: the rewritten file holds items 50 on, damage and
	// all, and no mark points into what was cut off.
	if s, err = openSpill(dir, 1, 2, 1000); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if len(s.errs) != 1 || !strings.Contains(s.errs[0], "checksum mismatch") {
		t.Errorf("the next open: %q; want the damaged record alone", s.errs)
	}
	got = nil
	for s.unread() {
		got = append(got, read(4096)...)
	}
	check("the next run", got, 50)
}
