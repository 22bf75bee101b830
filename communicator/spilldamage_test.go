package communicator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// spillDamageFixture is a spill file of 40 items from node 1 to node 2
// with a mark after item 4 (items 0..3 acknowledged), and the offsets of
// its records (item k's record at items[k], the mark at mark).
type spillDamageFixture struct {
	orig  []byte
	items []int64 // start of item k's record; items[40] is the end of the file
	mark  int64
}

func newSpillDamageFixture(t testing.TB) spillDamageFixture {
	t.Helper()
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fx spillDamageFixture
	for k := range 40 {
		if k == 4 {
			fx.mark = s.end
			s.mark(s.end, false) // the mark record's own offset: every item before it is acknowledged
		}
		fx.items = append(fx.items, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)+fmt.Sprintf("/%d", k*k)))
	}
	fx.items = append(fx.items, s.end)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	fx.orig, _ = os.ReadFile(spillPath(dir, 1, 2))
	return fx
}

// check opens damaged as the spill file and verifies the reader's
// promises: no panic; every item read back is an item written, at most
// once; every acknowledged-after item whose record bytes are unchanged is
// read back; CheckSpill counts exactly what is read back and reports
// damage or a note whenever the file changed (but for a cut at a record
// boundary, which a file without a commit cannot tell).
func (fx spillDamageFixture) check(t *testing.T, what string, damaged []byte) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "spill-1-2")
	if err := os.WriteFile(path, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckSpill(dir)
	if err != nil {
		t.Fatalf("%s: CheckSpill: %v", what, err)
	}
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatalf("%s: open: %v", what, err)
	}
	defer s.close()
	// Small chunks, as a peer with a small window reads them, so that
	// the reader jumps over damage across chunk boundaries too.
	type item struct {
		tag uint64
		url string
	}
	var got []item
	var q queue
	for i := 0; s.unread(); i++ {
		if i > len(damaged) {
			t.Fatalf("%s: reader does not advance", what)
		}
		if err := s.readChunk(&q, 1+i%97); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for k := range q.len() {
			it := q.items[q.head+k]
			got = append(got, item{it.tag, string(q.bytesOf(it))})
		}
		q.reset()
	}
	seen := map[uint64]bool{}
	for k, it := range got {
		want := testURL(1, 2, int(it.tag)) + fmt.Sprintf("/%d", it.tag*it.tag)
		if it.tag >= 40 || it.url != want || seen[it.tag] {
			t.Fatalf("%s: item %d read back as tag %d %q (seen before: %v)", what, k, it.tag, it.url, seen[it.tag])
		}
		seen[it.tag] = true
	}
	for k := 4; k < 40; k++ {
		a, b := fx.items[k], fx.items[k+1]
		if b <= int64(len(damaged)) && bytes.Equal(damaged[a:b], fx.orig[a:b]) && !seen[uint64(k)] {
			t.Errorf("%s: intact item %d (offset %d) not read back; errors %q", what, k, a, s.errs)
		}
	}
	if len(got) != rep.Deliverable() {
		t.Errorf("%s: read %d items back; check says %d are deliverable", what, len(got), rep.Deliverable())
	}
	boundaryCut := false
	if len(damaged) < len(fx.orig) && bytes.Equal(damaged, fx.orig[:len(damaged)]) {
		for _, o := range append(fx.items, fx.mark) {
			boundaryCut = boundaryCut || int64(len(damaged)) == o
		}
	}
	if !bytes.Equal(damaged, fx.orig) && !boundaryCut && len(rep.Findings) == 0 {
		t.Errorf("%s: CheckSpill finds nothing", what)
	}
	if (len(rep.Findings) > 0) != (len(s.errs) > 0) {
		t.Errorf("%s: check found %v, open reported %q", what, rep.Findings, s.errs)
	}
}

// spillFault applies fault kind (0 bit flip, 1 zeroed range, 2
// truncation, 3 appended junk, 4 swapped blocks) at off with size n,
// junk drawn from seed.
func spillFault(orig []byte, kind uint8, off, n int, seed uint64) (string, []byte) {
	b := bytes.Clone(orig)
	rng := rand.New(rand.NewPCG(seed, 1))
	body := len(b) - spillHeader
	off = spillHeader + off%body
	n = 1 + n%64
	switch kind % 5 {
	case 0:
		b[off] ^= 1 << (seed % 8)
		return fmt.Sprintf("bit flip at %d", off), b
	case 1:
		clear(b[off:min(off+n, len(b))])
		return fmt.Sprintf("zeroed %d bytes at %d", n, off), b
	case 2:
		return fmt.Sprintf("truncated at %d", off), b[:off]
	case 3:
		junk := make([]byte, n)
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		return fmt.Sprintf("%d bytes of junk appended", n), append(b, junk...)
	default:
		other := spillHeader + rng.IntN(body)
		n = min(n, len(b)-off, len(b)-other)
		if off > other {
			off, other = other, off
		}
		n = min(n, other-off)
		x := bytes.Clone(b[off : off+n])
		copy(b[off:], b[other:other+n])
		copy(b[other:], x)
		return fmt.Sprintf("%d-byte blocks at %d and %d swapped", n, off, other), b
	}
}

// TestSpillDamage: each of bit flips, zeroed ranges, truncation, appended
// junk and swapped blocks at 40 random positions over a spill file.
func TestSpillDamage(t *testing.T) {
	fx := newSpillDamageFixture(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for kind := range uint8(5) {
		for range 40 {
			what, b := spillFault(fx.orig, kind, rng.IntN(1<<20), rng.IntN(1<<10), rng.Uint64())
			fx.check(t, what, b)
		}
	}
}

// FuzzSpillDamage: the same promises for the fault kinds, positions and
// sizes the fuzzer chooses (junk comes from a PRNG: a fuzzer writing a
// record with a valid CRC-32C of its own is a valid record).
func FuzzSpillDamage(f *testing.F) {
	fx := newSpillDamageFixture(f)
	f.Add(uint8(0), uint32(100), uint16(1), uint64(3))
	f.Add(uint8(1), uint32(40), uint16(60), uint64(0))
	f.Add(uint8(4), uint32(200), uint16(30), uint64(9))
	f.Fuzz(func(t *testing.T, kind uint8, off uint32, n uint16, seed uint64) {
		what, b := spillFault(fx.orig, kind, int(off), int(n), seed)
		fx.check(t, what, b)
	})
}

// TestSpillManyDamagedStretches: a spill file damaged in many places
// (here every other record of 4000, and a damaged tail) had the start log
// a line for each of its 2001 damaged stretches and keep them all in
// SpillErrors, which every Stats copied (150,000 lines and 22 MB for a
// 19 MB file so damaged); now a bounded few are kept and logged, the last
// saying how many more there were, and the damage is counted whole.
func TestSpillManyDamagedStretches(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	const n = 4000
	for k := range n {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	path := spillPath(dir, 1, 2)
	b, _ := os.ReadFile(path)
	for i := 0; i < n; i += 2 {
		b[offs[i]+recHead+3] ^= 0x40
	}
	b = append(b, "junk"...) // a damaged tail
	os.WriteFile(path, b, 0o644)
	var mu sync.Mutex
	var logs []string
	cl := newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = dir
			c.Logf = func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
		}
	})
	st := cl.eps[0].Stats().Peers[0]
	if st.SpillDamaged != n/2+1 {
		t.Errorf("SpillDamaged %d, want %d", st.SpillDamaged, n/2+1)
	}
	errs := st.SpillErrors
	if len(errs) > 64 || !strings.Contains(errs[len(errs)-1], ".bad-") || !strings.Contains(errs[len(errs)-1], "not listed") {
		t.Errorf("%d spill errors kept, the last %q; want a few, the last naming the tail kept aside and how many are not listed", len(errs), errs[len(errs)-1])
	}
	mu.Lock()
	lines := len(logs)
	mu.Unlock()
	if lines > 64 {
		t.Errorf("the start logged %d lines", lines)
	}
	waitUntil(t, 10*time.Second, "the intact items delivered", func() bool { return cl.sinks[1].count() == n/2 })
}

// TestSpillDamagedStretchesNotAllKept: the damaged stretches the open
// found were all kept for the reader to jump over, about 90 bytes each for
// the whole run (13 MB for 150,000); now the first spillBadKept are, and
// the reader finds the rest again as it comes to them, without counting or
// reporting them twice: the same items delivered, the same counts.
func TestSpillDamagedStretchesNotAllKept(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	const n = 3 * spillBadKept
	for k := range 2 * n {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	path := spillPath(dir, 1, 2)
	b, _ := os.ReadFile(path)
	for i := 0; i < 2*n; i += 2 {
		b[offs[i]+recHead+3] ^= 0x40
	}
	os.WriteFile(path, b, 0o644)
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if len(s.bad) > spillBadKept {
		t.Errorf("%d damaged stretches kept for the whole run", len(s.bad))
	}
	bytes, regions, errs := s.skippedBytes, s.skippedRegions, len(s.errs)
	var q queue
	for i := 0; s.unread(); i++ {
		if i > 2*n {
			t.Fatal("reader does not advance")
		}
		if err := s.readChunk(&q, q.bytes+1+i%997); err != nil {
			t.Fatal(err)
		}
	}
	for k := range q.len() {
		if it := q.items[q.head+k]; it.tag != uint64(2*k+1) {
			t.Fatalf("item %d read back has tag %d, want %d", k, it.tag, 2*k+1)
		}
	}
	if q.len() != n || regions != n || s.skippedRegions != regions || s.skippedBytes != bytes || len(s.errs) != errs {
		t.Fatalf("read %d items (want %d); damage counted %d, %d bytes at the open, %d, %d bytes after reading; %d errors, then %d",
			q.len(), n, regions, bytes, s.skippedRegions, s.skippedBytes, errs, len(s.errs))
	}
}

// TestSpillReaderSkipsInOneWindow: each damaged stretch the reader found
// again (those past the spillBadKept the open lists) made it a new read
// window, 256 KiB allocated and read for a stretch of 100 bytes: 1 GB for
// a 475 KB file damaged in 4,000 places, 10 GB and seconds for ten times
// that. Now the reader keeps one window for its searches, and the same
// items come back.
func TestSpillReaderSkipsInOneWindow(t *testing.T) {
	const n = 4000
	s := spill{version: spillVersion, end: spillHeader} // records as they lie after the header
	var damaged []int64
	for k := range n {
		item := append([]byte{recItem, 0}, testURL(1, 2, k)...)
		damaged = append(damaged, s.end)
		s.appendRecord(item)
		s.appendRecord(item)
	}
	b := append(spillHeaderBytes(1, 2), s.buf...)
	for _, o := range damaged {
		b[o+recHead+3] ^= 1
	}
	dir := t.TempDir()
	if err := os.WriteFile(spillPath(dir, 1, 2), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	var q queue
	got := 0
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; sp.unread(); i++ {
		if i > 2*n {
			t.Fatal("reader does not advance")
		}
		if err := sp.readChunk(&q, 4096); err != nil {
			t.Fatal(err)
		}
		got += q.len()
		q.reset()
	}
	runtime.ReadMemStats(&after)
	if got != n || sp.skippedRegions != n {
		t.Errorf("read %d items back, %d damaged stretches; want %d, %d", got, sp.skippedRegions, n, n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading a %d-byte file damaged in %d places allocated %d bytes", len(b), n, alloc)
	}
}
