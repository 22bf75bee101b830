package communicator

import (
	"os"
	"runtime"
	"testing"
)

// TestScanMemoryAfterMarks: a spill file holding every item a busy run
// sent, with a mark of what was acknowledged every 100 items (the file is
// cut back only when all is acknowledged at once, rare under steady
// traffic), was scanned at the next start keeping two offsets for every
// record in it; now only for those after the last mark, and what it
// delivers is the same.
func TestScanMemoryAfterMarks(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000)
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
	sc, err := scanSpill(f, fi.Size(), 1, 2, 1000)
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
