package communicator

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// compact is a rewrite made at once: begun, copied and finished in turn.
func (s *spill) compact(off int64) (int64, error) {
	c, err := s.compactBegin(off)
	if c == nil {
		return 0, err
	}
	c.copyTo(s.flushed)
	return s.compactFinish(c)
}

// TestSpillCompactLeavesPeerFree: a rewrite of the spill file copied up
// to 16 MiB with the peer's lock held, so the sends, acknowledgements
// and stats of that peer waited for it (forever here, as the copy waits
// for them); now the copy is made without the lock, and the items
// spilled and the marks written meanwhile are in the rewritten file:
// every item arrives, and the file reopens without damage.
func TestSpillCompactLeavesPeerFree(t *testing.T) {
	dir := t.TempDir()
	conns, addrs := loopbackConns(t, 2)
	recv := newSink()
	mk := func(self NodeID, c *net.UDPConn, h Handler, spill string) *Endpoint {
		ep, err := New(Config{Self: self, Peers: addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: h, AckOnReturn: true, SpillDir: spill, QueueBytes: 1, SentCache: -1,
			SpillUpkeepEvery: 10 * time.Millisecond,
			FlushInterval:    5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	b := mk(2, conns[1], recv.handle, "")
	defer b.Close()
	a := mk(1, conns[0], func(NodeID, uint64, []Item) {}, dir)
	var sendMu sync.Mutex
	next := 0 // the next item to send; the hook's goroutine sends too
	send := func(n int) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		for range n {
			if err := a.Send(2, 0, []byte(testURL(1, 2, next))); err != nil {
				return err
			}
			next++
		}
		return a.Sync()
	}
	var copies, stalled atomic.Int32
	p := a.peers[2]
	p.mu.Lock()
	p.spill.compactAt = 8 << 10
	p.spill.compactHook = func() {
		if copies.Add(1) > 1 {
			return
		}
		// Items spilled and acknowledged, stats read, while it copies.
		done := make(chan error, 1)
		go func() {
			if err := send(300); err != nil {
				done <- err
				return
			}
			a.Stats()
			for a.Backlog(2) > 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // upkeeps mark what was acknowledged
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			stalled.Add(1)
		}
	}
	p.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for copies.Load() == 0 || p.compactRunning() {
		if time.Now().After(deadline) {
			t.Fatal("no rewrite done in 30 s")
		}
		if copies.Load() == 0 {
			if err := send(20); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if stalled.Load() > 0 {
		t.Fatal("sends, acknowledgements and stats of the peer waited 10 s for the rewrite of its spill file")
	}
	// The marks written during the copy name places in the new file.
	p.mu.Lock()
	if err := p.spill.flush(); err != nil {
		t.Fatal(err)
	}
	sc, err := scanSpill(p.spill.f, p.spill.flushed, 1, 2, 1000, 0)
	p.mu.Unlock()
	if err != nil || len(sc.bad) > 0 {
		t.Fatalf("the rewritten file: %v, damage %v", err, sc.bad)
	}
	if err := send(200); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "every item delivered", func() bool { return a.Backlog(2) == 0 })
	recv.mu.Lock()
	for k := range next {
		if recv.got[fmt.Sprintf("1 0 %s", testURL(1, 2, k))] == 0 {
			t.Errorf("item %d never delivered (%d distinct of %d)", k, len(recv.got), next)
			break
		}
	}
	recv.mu.Unlock()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if len(s.errs) > 0 || s.unreadItems != 0 {
		t.Errorf("the rewritten file reopens with %d items unread and errors %q", s.unreadItems, s.errs)
	}
}

// compactRunning reports whether a rewrite of the spill file is under way.
func (p *peer) compactRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spill.compacting != nil
}

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
	s, err := openSpill(dir, 1, 2, 1000, 0)
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
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
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
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
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

// TestSpillCompactDamageSinceOpen: a record damaged after the open (a bad
// sector under the running node), in the part a rewrite copies, made the
// rewrite fail and no rewrite was tried again for the rest of the run, the
// file growing with every item sent; now the rewrite copies the damage as
// it is and goes on at the next intact record: the reader skips and
// reports the damaged record, delivers the rest, and the next rewrite
// comes as usual.
func TestSpillCompactDamageSinceOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.close() }()
	s.compactAt = 1
	var offs []int64
	for k := range 60 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	s.compactAt = 1
	f, err := os.OpenFile(spillPath(dir, 1, 2), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, offs[55]+recHead+4) // item 55 damaged under the running endpoint
	f.Close()
	var got []uint64
	read := func(limit int) error {
		var q queue
		err := s.readChunk(&q, limit)
		for _, it := range q.items[q.head:] {
			got = append(got, it.tag)
		}
		return err
	}
	for len(got) < 52 { // the rest, 55 among it, is copied
		read(1)
	}
	at := s.readOff
	if gone, err := s.compact(at); err != nil || gone != at-spillHeader {
		t.Fatalf("compact at %d: moved %d, %v", at, gone, err)
	}
	var readErr error
	for s.unread() {
		if err := read(4096); err != nil {
			readErr = err
		}
	}
	var want []uint64
	for k := range uint64(60) {
		if k != 55 {
			want = append(want, k)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || readErr == nil || !strings.Contains(readErr.Error(), "checksum mismatch") {
		t.Fatalf("read %v, error %v; want every item but 55, and the damage reported", got, readErr)
	}
	// More items, all acknowledged but the last: rewritten again.
	var last int64
	for k := 60; k < 70; k++ {
		last = s.end
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	for s.unread() {
		read(4096)
	}
	if gone, err := s.compact(last); err != nil || gone == 0 {
		t.Fatalf("the next rewrite: moved %d, %v", gone, err)
	}
}
