package communicator

import (
	"bytes"
	"os"
	"runtime"
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
		if r.err != nil || len(r.sc.bad) != n || r.sc.items != 2*n || r.sc.unread != 0 || r.sc.consumed != last {
			t.Errorf("scan: %v, %d damaged stretches, %d items, %d unread, last mark %d; want %d, %d, 0, %d",
				r.err, len(r.sc.bad), r.sc.items, r.sc.unread, r.sc.consumed, n, 2*n, last)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the scan of a %d-byte file with %d damaged records and marks still ran after 60 s", len(b), n)
	}
}
