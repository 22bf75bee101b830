package communicator

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestScanMemoryAfterMarks: a spill file holding every item a busy run
// sent, with a mark of what was acknowledged every 100 items (the file is
// cut back only when all is acknowledged at once, rare under steady
// traffic), was scanned at the next start keeping two offsets for every
// record in it; now only for those after the last mark, and what it
// delivers is the same.
func TestScanMemoryAfterMarks(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	for k := range n {
		s.append(uint64(k), []byte("http://a.example/p"))
		if k%100 == 99 && k < n-50 {
			if err := s.mark(s.end, false); err != nil {
				t.Fatal(err)
			}
		}
		if len(s.buf) >= flushAt {
			s.flush()
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(spillPath(dir, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sc, err := scanSpill(f, fi.Size(), 1, 2, 1000, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if sc.items != n || sc.unread != 100 || len(sc.bad) != 0 {
		t.Fatalf("scan: %d items, %d unread, %d bad; want %d, 100, 0", sc.items, sc.unread, len(sc.bad), n)
	}
	// The window buffer (256 KiB) and little else.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("scanning a file of %d items allocated %d bytes", n, alloc)
	}
}

// TestScanMarksAmongDamage: every mark the scan of a spill file met was
// looked up in the list of damaged stretches found so far, one by one, so
// a file with many of each (here 200,000 damaged records, each followed
// by intact ones and a mark: 45 MB) took time growing with their product
// (about a minute here, many hours for a gigabyte): a start that hung.
// Now the lookup is a search, and the scan finds the same.
func TestScanMarksAmongDamage(t *testing.T) {
	s := spill{version: spillVersion, end: spillHeader} // records as they lie after the header
	var damaged []int
	var last int64
	const n = 200000
	for k := range n {
		item := append([]byte{recItem, 0}, testURL(1, 2, k)...)
		s.appendRecord(item)
		damaged = append(damaged, len(s.buf))
		s.appendRecord(item)
		s.appendRecord(item)
		last = spillHeader + int64(len(s.buf))
		s.mark(last, false)
	}
	b := append(spillHeaderBytes(1, 2), s.buf...)
	for _, o := range damaged {
		b[spillHeader+o+recHead+3] ^= 1
	}
	type result struct {
		sc  spillScan
		err error
	}
	done := make(chan result, 1)
	go func() {
		sc, err := scanSpill(bytes.NewReader(b), int64(len(b)), 1, 2, 1000, 0)
		done <- result{sc, err}
	}()
	select {
	case r := <-done:
		if _, regions := r.sc.skipped(); r.err != nil || regions != n || r.sc.items != 2*n || r.sc.unread != 0 || r.sc.consumed != last {
			t.Errorf("scan: %v, %d damaged stretches, %d items, %d unread, last mark %d; want %d, %d, 0, %d",
				r.err, regions, r.sc.items, r.sc.unread, r.sc.consumed, n, 2*n, last)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the scan of a %d-byte file with %d damaged records and marks still ran after 60 s", len(b), n)
	}
}

// TestScanDescriptionsBounded: the open's scan kept every damaged
// stretch with its message until it ended, about 140 bytes each, so a
// file damaged every few records (a hostile file can have a stretch every
// 12 bytes) cost many times its size in memory. Now the first
// spillDescribed are described, the rest counted and summed up in one
// line (the latest, a damaged tail, still said), and of them the scan
// keeps only those after the last mark; the counts and what is
// delivered are the same, a mark pointing into an undescribed stretch
// still counts.
func TestScanDescriptionsBounded(t *testing.T) {
	const n = 4 * spillDescribed
	s := spill{version: spillVersion, end: spillHeader} // records as they lie after the header
	var damaged []int
	var markTo int64
	for k := range n {
		item := append([]byte{recItem, 0}, testURL(1, 2, k)...)
		if k == 3*n/4 {
			// Acknowledged up to the middle of the damaged record
			// before: the mark points into a stretch the scan does
			// not describe, and counts from its end.
			markTo = spillHeader + int64(damaged[k-1]) + 4
			s.mark(markTo, false)
		}
		damaged = append(damaged, len(s.buf))
		s.appendRecord(item)
		s.appendRecord(item)
	}
	b := append(spillHeaderBytes(1, 2), s.buf...)
	for _, o := range damaged {
		b[spillHeader+o+recHead+3] ^= 1
	}
	b = append(b, "a damaged tail"...)
	sc, err := scanSpill(bytes.NewReader(b), int64(len(b)), 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	described := 0
	for _, r := range sc.bad {
		if r.why != "" {
			described++
		}
	}
	if described > spillDescribed+1 {
		t.Errorf("%d damaged stretches of %d described at the end of the scan; want at most %d", described, n+1, spillDescribed+1)
	}
	if len(sc.bad) > spillDescribed+n/4+1 {
		t.Errorf("%d damaged stretches kept; want those described and those after the last mark (%d)", len(sc.bad), spillDescribed+n/4+1)
	}
	if _, regions := sc.skipped(); regions != n+1 || sc.items != n || sc.unread != n/4+1 || sc.consumed <= markTo {
		t.Errorf("scan: %d damaged stretches, %d items, %d unread, acknowledged to %d; want %d, %d, %d, past %d",
			regions, sc.items, sc.unread, sc.consumed, n+1, n, n/4+1, markTo)
	}
	if last := sc.bad[len(sc.bad)-1]; last.why == "" || last.end != int64(len(b)) {
		t.Errorf("the damaged tail is not described: %+v", last)
	}

	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	summed := 0
	for _, f := range rep.Findings {
		if strings.Contains(f.What, fmt.Sprintf("%d more damaged stretches", n-spillDescribed)) && f.Damage {
			summed++
		}
	}
	if len(rep.Findings) > spillDescribed+2 || summed != 1 {
		t.Errorf("kspider check: %d findings, %d summing up the %d stretches not described; want at most %d, one", len(rep.Findings), summed, n-spillDescribed, spillDescribed+2)
	}
	if _, regions := rep.Skipped(); regions != n+1 || rep.Deliverable() != n/4+1 {
		t.Errorf("kspider check: %d damaged stretches, %d deliverable; want %d, %d", regions, rep.Deliverable(), n+1, n/4+1)
	}
	sp, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	var q queue
	for i := 0; sp.unread(); i++ {
		if i > n {
			t.Fatal("reader does not advance")
		}
		if err := sp.readChunk(&q, 1<<16); err != nil {
			t.Fatal(err)
		}
	}
	if q.len() != n/4+1 || sp.skippedRegions != n+1 {
		t.Errorf("open: %d items read back, %d damaged stretches; want %d, %d", q.len(), sp.skippedRegions, n/4+1, n+1)
	}
}

// writeNoMarks writes a spill file of n items and no mark (a peer down
// since the file was last emptied) and returns it open, with its size.
func writeNoMarks(tb testing.TB, n int) (*os.File, int64) {
	dir := tb.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for k := range n {
		s.append(uint64(k), []byte("http://a.example/p"))
		if len(s.buf) >= flushAt {
			s.flush()
		}
	}
	if err := s.close(); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(spillPath(dir, 1, 2))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return f, fi.Size()
}

// TestScanMemoryNoMarks: the scan kept two offsets (16 bytes, and as
// much again while its slices grew) for every record after the last mark,
// so a file with none, 28-byte records, cost more memory than its size;
// now what follows the last mark is counted as it is read, and the
// scan's memory does not grow with the file.
func TestScanMemoryNoMarks(t *testing.T) {
	const n = 200000
	f, size := writeNoMarks(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sc, err := scanSpill(f, size, 1, 2, 1000, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if sc.items != n || sc.unread != n || len(sc.bad) != 0 || sc.consumed != spillHeader {
		t.Fatalf("scan: %d items, %d unread, %d bad, acknowledged to %d; want %d, %d, 0, %d", sc.items, sc.unread, len(sc.bad), sc.consumed, n, n, spillHeader)
	}
	// The window buffer (256 KiB) and little else.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("scanning a file of %d bytes, %d items and no mark, allocated %d bytes", size, n, alloc)
	}
}

// BenchmarkScanNoMarks scans a spill file of 200,000 items and no mark;
// B/op is the scan's memory.
func BenchmarkScanNoMarks(b *testing.B) {
	f, size := writeNoMarks(b, 200000)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanSpill(f, size, 1, 2, 1000, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScanMarkValues: a mark is taken when it names a place from the last
// mark taken up to itself where a record starts, or one inside a damaged
// stretch (acknowledged to its end), listed or not; one naming the middle
// of an intact record, a place before the last mark or after itself is
// refused, only its record skipped. The scan checks marks without keeping
// every record's offset, so this is what it checks.
func TestScanMarkValues(t *testing.T) {
	item := func(k int) []byte { return append([]byte{recItem, 0}, testURL(1, 2, k)...) }
	// scan scans the file of s's records, damaged, and checks that the
	// open's reader reads back the items the scan counted.
	scan := func(t *testing.T, s *spill, damage func(b []byte)) spillScan {
		b := append(spillHeaderBytes(1, 2), s.buf...)
		if damage != nil {
			damage(b)
		}
		sc, err := scanSpill(bytes.NewReader(b), int64(len(b)), 1, 2, 1000, 0)
		if err != nil {
			t.Fatal(err)
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
		for i := 0; sp.unread(); i++ {
			if i > len(b) {
				t.Fatal("reader does not advance")
			}
			if err := sp.readChunk(&q, 1<<16); err != nil {
				t.Fatal(err)
			}
		}
		if _, regions := sc.skipped(); q.len() != sc.unread || sp.skippedRegions != regions {
			t.Errorf("open: %d items read back, %d damaged stretches; the scan counted %d, %d", q.len(), sp.skippedRegions, sc.unread, regions)
		}
		return sc
	}
	t.Run("refused", func(t *testing.T) {
		s := &spill{version: spillVersion, end: spillHeader}
		s.appendRecord(item(0))
		mid := s.end + 3
		s.appendRecord(item(1))
		taken := s.end
		s.mark(mid, false) // inside item 1's record
		s.consumed = 0
		s.mark(taken, false)
		s.consumed = 0
		s.mark(spillHeader+1, false) // before the mark taken
		s.consumed = 0
		s.mark(s.end+100, false) // past itself
		s.appendRecord(item(2))
		sc := scan(t, s, nil)
		// The two refused after the one taken make one stretch.
		if bytes, regions := sc.skipped(); sc.consumed != taken || sc.unread != 1 || sc.items != 3 || regions != 2 || bytes != 3*(recHead+9) {
			t.Errorf("acknowledged to %d, %d of %d items unread, %d damaged stretches of %d bytes; want %d, 1 of 3, 2 of %d", sc.consumed, sc.unread, sc.items, regions, bytes, taken, 3*(recHead+9))
		}
		for _, r := range sc.bad {
			if !strings.Contains(r.why, "bad mark record") {
				t.Errorf("stretch %+v; want a mark's record, said bad", r)
			}
		}
	})
	t.Run("before a torn record", func(t *testing.T) {
		// A refused mark, then a record cut short at the end: damage,
		// not a crash's torn write.
		s := &spill{version: spillVersion, end: spillHeader}
		s.appendRecord(item(0))
		s.mark(s.end-3, false)
		s.appendRecord(item(1))
		s.buf = s.buf[:len(s.buf)-5]
		sc := scan(t, s, nil)
		if n := len(sc.bad); n != 1 || sc.bad[0].torn || sc.good != sc.bad[0].start || !strings.Contains(sc.bad[0].why, "bad mark record") {
			t.Errorf("damaged stretches %+v; want one, the refused mark's and the cut record's, not torn", sc.bad)
		}
	})
	t.Run("into damage", func(t *testing.T) {
		// Enough damaged stretches that some are not listed (after the
		// spillDescribed described and the spillBadKept kept); a mark
		// names a place inside each kind.
		const n = spillDescribed + 2*spillBadKept
		s := &spill{version: spillVersion, end: spillHeader}
		var damaged []int64
		for k := range n {
			damaged = append(damaged, s.end)
			s.appendRecord(item(k))
			s.appendRecord(item(k))
		}
		notListed := damaged[n-10]
		s.mark(notListed+5, false)
		want := notListed + int64(recHead+len(item(n-10)))
		s.appendRecord(item(n))
		sc := scan(t, s, func(b []byte) {
			for _, o := range damaged {
				b[o+recHead+3] ^= 1
			}
		})
		// The intact copy of each of the last 10, and the one after.
		if sc.consumed != want || sc.unread != 11 || sc.items != n+1 {
			t.Errorf("acknowledged to %d, %d of %d items unread; want %d, 11 of %d", sc.consumed, sc.unread, sc.items, want, n+1)
		}
	})
}
