package communicator

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPeerDownSpill: node 2 is down for ten minutes of test-clock time
// while node 1 sends; node 1's memory queue stays bounded, the rest goes
// to its spill file, node 1 itself restarts once meanwhile, and when node
// 2 comes back every URL arrives exactly once and the file is emptied.
func TestPeerDownSpill(t *testing.T) {
	clock := NewManualClock(time.Unix(1700000000, 0))
	conns, addrs := loopbackConns(t, 2)
	conns[1].Close() // node 2 is down
	dir := t.TempDir()
	cfg1 := func(c *net.UDPConn) Config {
		return Config{Self: 1, Peers: addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, Clock: clock,
			Window: 8, QueueBytes: 4096, SpillDir: dir, DownAfter: 3 * time.Second,
			RetransmitMin: 20 * time.Millisecond, RetransmitMax: 2 * time.Second}
	}
	ep1, err := New(cfg1(conns[0]))
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000
	send := func(from, to int) {
		for k := from; k < to; k++ {
			if err := ep1.Send(2, uint64(k), []byte(testURL(1, 2, k))); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, total/2)
	for range 300 { // five minutes
		clock.Advance(time.Second)
	}
	waitUntil(t, 10*time.Second, "node 2 reported down with a spill file", func() bool {
		clock.Advance(10 * time.Millisecond)
		ps := ep1.Stats().Peers[0]
		return ps.Down && ps.SpillItems > 0
	})
	ps := ep1.Stats().Peers[0]
	if ps.QueuedBytes > 4096 {
		t.Errorf("memory queue holds %d bytes; bound 4096", ps.QueuedBytes)
	}
	t.Logf("node 2 down: %d queued, %d in flight, %d spilled (%d bytes), %d retransmits",
		ps.Queued, ps.UnackedItems, ps.SpillItems, ps.SpillBytes, ps.Retransmits)

	// Node 1 restarts cleanly while node 2 is still down: what it had in
	// memory goes to the spill file too.
	a1 := conns[0].LocalAddr().(*net.UDPAddr)
	if err := ep1.Close(); err != nil {
		t.Fatal(err)
	}
	c1, err := net.ListenUDP("udp", a1)
	if err != nil {
		t.Fatal(err)
	}
	if ep1, err = New(cfg1(c1)); err != nil {
		t.Fatal(err)
	}
	defer ep1.Close()
	if got := ep1.Stats().Peers[0].SpillItems; got != total/2 {
		t.Fatalf("after restart %d items spilled; want %d", got, total/2)
	}
	send(total/2, total)
	for range 300 {
		clock.Advance(time.Second)
	}

	// Node 2 comes back on its address.
	c2, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[2]))
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	ep2, err := New(Config{Self: 2, Peers: addrs, Conn: c2, Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: s.handle, AckOnReturn: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	back := clock.Now()
	waitUntil(t, 30*time.Second, "spilled URLs delivered", func() bool {
		clock.Advance(100 * time.Millisecond)
		return s.count() >= total && ep1.Backlog(2) == 0
	})
	t.Logf("node 2 back: everything delivered after %v of test-clock time", clock.Now().Sub(back))
	s.mu.Lock()
	for k := range total {
		if c := s.got[fmt.Sprintf("1 %d %s", k, testURL(1, 2, k))]; c != 1 {
			t.Fatalf("URL %d delivered %d times", k, c)
		}
	}
	if s.total != total {
		t.Fatalf("%d deliveries; want %d", s.total, total)
	}
	s.mu.Unlock()
	waitUntil(t, 10*time.Second, "spill file emptied", func() bool {
		clock.Advance(100 * time.Millisecond)
		ps := ep1.Stats().Peers[0]
		return ps.SpillBytes == spillHeader && !ps.Down
	})
}

// TestSpillCorrupt: a damaged record in the middle of a spill file is
// reported with the file and offset and skipped exactly: the records
// before and after it are delivered; a damaged tail is kept aside.
func TestSpillCorrupt(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 10 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	offs = append(offs, s.end)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	path := spillPath(dir, 1, 2)
	orig, _ := os.ReadFile(path)
	b := bytes.Clone(orig)
	b[offs[6]+recHead+3] ^= 0x40                  // record 6: its checksum fails
	clear(b[offs[2]+5 : offs[4]+6])               // records 2 and 3, and 4's length and checksum
	b = append(b[:offs[9]+4], b[offs[9]+4+1:]...) // record 9 cut short by one byte, at the end
	os.WriteFile(path, b, 0o644)

	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	want := []string{
		fmt.Sprintf("checksum mismatch in record at offset %d; skipped %d bytes to the next intact record at offset %d", offs[2], offs[5]-offs[2], offs[5]),
		fmt.Sprintf("checksum mismatch in record at offset %d; skipped %d bytes to the next intact record at offset %d", offs[6], offs[7]-offs[6], offs[7]),
		fmt.Sprintf("at offset %d runs past the end of the file; the 5 intact items before offset %d are delivered", offs[9], offs[9]),
	}
	if len(s.errs) != len(want) {
		t.Fatalf("errors %q; want %d", s.errs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(s.errs[i], path) || !strings.Contains(s.errs[i], w) {
			t.Errorf("error %q; want one naming %s and %q", s.errs[i], path, w)
		}
	}
	var q queue
	for s.unread() {
		if err := s.readChunk(&q, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	got := []int{}
	for k := range q.len() {
		it := q.items[k]
		if string(q.bytesOf(it)) != testURL(1, 2, int(it.tag)) {
			t.Fatalf("item %d: %d %q", k, it.tag, q.bytesOf(it))
		}
		got = append(got, int(it.tag))
	}
	if fmt.Sprint(got) != "[0 1 5 7 8]" {
		t.Fatalf("items %v read back; want [0 1 5 7 8]", got)
	}
	if s.skippedBytes != int64(len(b))-offs[9]+offs[5]-offs[2]+offs[7]-offs[6] || s.skippedRegions != 3 {
		t.Errorf("skipped %d bytes in %d stretches", s.skippedBytes, s.skippedRegions)
	}
	if _, err := os.Stat(fmt.Sprintf("%s.bad-%d", path, offs[9])); err != nil {
		t.Errorf("damaged tail not kept: %v", err)
	}
	// A file with a bad header is moved aside whole.
	os.WriteFile(spillPath(dir, 1, 3), []byte("not a spill file at all"), 0o644)
	s3, err := openSpill(dir, 1, 3, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.close()
	if len(s3.errs) != 1 || !strings.Contains(s3.errs[0], "offset 0") || s3.unread() {
		t.Fatalf("bad header: errors %q, unread %v", s3.errs, s3.unread())
	}
	if _, err := os.Stat(filepath.Join(dir, "spill-1-3.bad-0")); err != nil {
		t.Error(err)
	}
}

// TestSpillSyncItems: Endpoint.Sync fsyncs a spill file only for items
// appended since its last fsync; marks alone wait (they only narrow what a
// crash delivers again), and are durable after the next items' fsync.
func TestSpillSyncItems(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1024, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.items {
		t.Fatal("a new spill file has items to sync")
	}
	for k := range 3 {
		if err := s.append(uint64(k), []byte(testURL(1, 2, k))); err != nil {
			t.Fatal(err)
		}
	}
	if !s.items {
		t.Fatal("items appended, nothing to sync")
	}
	if err := s.syncItems(); err != nil {
		t.Fatal(err)
	}
	if s.items || s.dirty || len(s.buf) > 0 {
		t.Fatalf("after syncItems: items %v, dirty %v, %d bytes buffered", s.items, s.dirty, len(s.buf))
	}
	if err := s.mark(s.end-1, false); err != nil { // a mark alone
		t.Fatal(err)
	}
	if err := s.syncItems(); err != nil {
		t.Fatal(err)
	}
	if s.items || len(s.buf) == 0 {
		t.Fatalf("a mark alone: items %v, %d bytes buffered (want it left for later)", s.items, len(s.buf))
	}
	if err := s.append(9, []byte(testURL(1, 2, 9))); err != nil {
		t.Fatal(err)
	}
	if err := s.syncItems(); err != nil {
		t.Fatal(err)
	}
	if s.items || s.dirty || len(s.buf) > 0 {
		t.Fatalf("mark and item synced: items %v, dirty %v, %d bytes buffered", s.items, s.dirty, len(s.buf))
	}
}

// TestSpillItemLongerThanMaxURL: a spill file written by a run with a
// larger Payload may hold items longer than this run sends. Such an item
// is reported and skipped, and the items beside it are delivered: sent,
// the peer would drop its datagram as malformed at every retransmission
// and the backlog would never drain.
func TestSpillItemLongerThanMaxURL(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, MaxItemLen(MaxPayload), 0)
	if err != nil {
		t.Fatal(err)
	}
	long := "http://long.example/" + strings.Repeat("a", MaxItemLen(DefaultPayload)-15)
	off := s.end
	for _, u := range []string{"http://a.example/", long, "http://b.example/"} {
		if u == long {
			off = s.end
		}
		s.append(1, []byte(u))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = dir // default Payload: items up to MaxItemLen(DefaultPayload)
		}
	})
	errs := cl.eps[0].Stats().Peers[0].SpillErrors
	want := fmt.Sprintf("record at offset %d: item of %d bytes, longer than the longest this endpoint sends (%d)", off, len(long), MaxItemLen(DefaultPayload))
	if len(errs) != 1 || !strings.Contains(errs[0], want) {
		t.Errorf("spill errors %q; want one saying %q", errs, want)
	}
	waitUntil(t, 10*time.Second, "the backlog drained", func() bool { return cl.eps[0].Backlog(2) == 0 })
	s2 := cl.sinks[1]
	s2.mu.Lock()
	defer s2.mu.Unlock()
	if s2.total != 2 || s2.got["1 1 http://a.example/"] != 1 || s2.got["1 1 http://b.example/"] != 1 {
		t.Errorf("delivered %v; want the two short items once each", s2.got)
	}
	if d := cl.eps[1].Stats().Drops["malformed"]; d != 0 {
		t.Errorf("the peer dropped %d datagrams as malformed", d)
	}
}

// TestSpillShrunkUnderReader: a spill file cut short while the endpoint
// reads it (by an operator, by a tool) must not make the reader
// take the bytes of an earlier chunk, still in its buffer, for the records
// that are gone: each item is read at most once, and the loss is reported
// with the offset.
func TestSpillShrunkUnderReader(t *testing.T) {
	for _, cut := range []int64{0, 50} { // at a record boundary, inside a record
		dir := t.TempDir()
		s, err := openSpill(dir, 1, 2, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 40 {
			s.append(uint64(k), []byte(testURL(1, 2, k)))
		}
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
		if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil { // an earlier run's items: read from the file
			t.Fatal(err)
		}
		seen := map[string]int{}
		var errs []error
		read := func() {
			var q queue
			if err := s.readChunk(&q, 500); err != nil {
				errs = append(errs, err)
			}
			for _, it := range q.items[q.head:] {
				seen[string(q.bytesOf(it))]++
			}
		}
		read()
		at := s.readOff + cut
		if err := os.Truncate(s.path, at); err != nil {
			t.Fatal(err)
		}
		for i := 0; s.unread(); i++ {
			if i > 100 {
				t.Fatal("reader does not advance")
			}
			read()
		}
		s.close()
		for u, c := range seen {
			if c > 1 {
				t.Errorf("cut at +%d: %s read %d times", cut, u, c)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("at offset %d", at-cut)) {
			t.Errorf("cut at +%d: errors %v; want one naming offset %d", cut, errs, at-cut)
		}
	}
}

// TestSpillZeroedUnderReader: records zeroed while the endpoint reads the
// file (a length of 0 has a matching checksum, 0) are reported with their
// offset, not a panic, and skipped alone: the intact records after them
// are read.
func TestSpillZeroedUnderReader(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 40 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil { // an earlier run's items: read from the file
		t.Fatal(err)
	}
	defer s.close()
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 100), offs[20])
	f.Close()
	var errs []error
	n := 0
	for i := 0; s.unread(); i++ {
		if i > 100 {
			t.Fatal("reader does not advance")
		}
		var q queue
		if err := s.readChunk(&q, 500); err != nil {
			errs = append(errs, err)
		}
		n += q.len()
	}
	if n != 38 {
		t.Errorf("%d items read; want the 38 not zeroed (100 bytes from item 20's record on: it and the next)", n)
	}
	want := fmt.Sprintf("bad record length 0 in record at offset %d", offs[20])
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("errors %v; want one saying %q", errs, want)
	}
}

// TestSpillDamageLogged: damage the open of a spill file finds (here a
// record in the middle and a header of another format) costs items, so
// New logs it, naming the file and offset, as it does the state file's;
// the stats alone are read by nobody when a node starts.
func TestSpillDamageLogged(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 5 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(spillPath(dir, 1, 2))
	b[offs[2]+recHead+3] ^= 0x40
	os.WriteFile(spillPath(dir, 1, 2), b, 0o644)
	old := spillHeaderBytes(1, 3)
	old[5] = 0 // version 0
	os.WriteFile(spillPath(dir, 1, 3), append(old, b[spillHeader:]...), 0o644)
	var mu sync.Mutex
	var logs []string
	newCluster(t, 3, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = dir
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(logs, "\n")
	for _, want := range []string{
		fmt.Sprintf("spill file %s: checksum mismatch in record at offset %d; skipped", spillPath(dir, 1, 2), offs[2]),
		fmt.Sprintf("spill file %s: bad header at offset 0", spillPath(dir, 1, 3)),
	} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
}

// TestSpillBadKeptAside: what a start moves aside for the operator (a
// file whose header is not this file's, a damaged tail) is not overwritten
// by the next start that finds the same: each goes to a name of its own,
// which the log names.
func TestSpillBadKeptAside(t *testing.T) {
	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	for i, content := range []string{"first bad header", "second bad header"} {
		os.WriteFile(path, []byte(content), 0o644)
		s, err := openSpill(dir, 1, 2, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := path + ".bad-0"
		if i > 0 {
			want += fmt.Sprintf(".%d", i)
		}
		if len(s.errs) != 1 || !strings.Contains(s.errs[0], "moved to "+want+",") {
			t.Errorf("start %d: errors %q; want one naming %s", i, s.errs, want)
		}
		s.close()
		if b, _ := os.ReadFile(want); string(b) != content {
			t.Errorf("start %d: %s holds %q; want %q", i, want, b, content)
		}
	}
	// A damaged tail at the same offset, twice.
	for i, junk := range []string{"junk one", "junk two"} {
		os.WriteFile(path, append(spillHeaderBytes(1, 2), junk...), 0o644)
		s, err := openSpill(dir, 1, 2, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%s.bad-%d", path, spillHeader)
		if i > 0 {
			want += fmt.Sprintf(".%d", i)
		}
		if len(s.errs) != 1 || !strings.HasSuffix(s.errs[0], " are in "+want) {
			t.Errorf("tail %d: errors %q; want one naming %s", i, s.errs, want)
		}
		s.close()
		if b, _ := os.ReadFile(want); string(b) != junk {
			t.Errorf("tail %d: %s holds %q; want %q", i, want, b, junk)
		}
	}
}

// TestSpillErrorSaidOnce: a spill file that cannot be written (here its
// descriptor is closed under the endpoint; a full disk, a failing device)
// fails at every tick's upkeep; the error is logged and kept in
// SpillErrors once while it lasts, not once per tick: a line per tick and a
// list without bound.
func TestSpillErrorSaidOnce(t *testing.T) {
	var mu sync.Mutex
	var logs []string
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = t.TempDir()
			c.QueueBytes = 1
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		}
	})
	ep := cl.eps[0]
	ep.Send(2, 0, []byte("http://a.example/"))
	waitUntil(t, 5*time.Second, "delivery", func() bool { return cl.sinks[1].count() == 1 })
	// And the file cut back once acknowledged: an upkeep still to do that
	// would fail to truncate, a second error beside the write's.
	waitUntil(t, 5*time.Second, "the spill file cut back", func() bool {
		return ep.Backlog(2) == 0 && ep.Stats().Peers[0].SpillBytes == spillHeader
	})
	p := ep.peers[2]
	p.mu.Lock()
	p.spill.f.Close()
	p.mu.Unlock()
	ep.Send(2, 0, []byte("http://b.example/"))
	time.Sleep(200 * time.Millisecond) // some 200 ticks of 1 ms
	errs := ep.Stats().Peers[0].SpillErrors
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "file already closed") {
			n++
		}
	}
	if n != 1 || len(errs) != 1 {
		t.Errorf("the write error logged %d times and kept %d times; want once each: %q", n, len(errs), errs)
	}
}
