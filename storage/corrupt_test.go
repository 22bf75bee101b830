package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// damagedStore writes pages 0..n-1 into one directory and returns it with
// the location of every page's record.
func damagedStore(t *testing.T, n uint64) (string, map[uint64]location) {
	t.Helper()
	dir, spans := layoutStore(t, Config{}, n)
	locs := map[uint64]location{}
	for id, sp := range spans {
		locs[id] = location{sp.seg, sp.off}
	}
	return dir, locs
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// scanAll scans dirs and returns the ids seen.
func scanAll(t *testing.T, r *Reader) map[uint64]bool {
	t.Helper()
	var mu sync.Mutex
	seen := map[uint64]bool{}
	err := r.Scan(context.Background(), func(p *Page) error {
		samePage(t, p, testPage(p.URLID))
		mu.Lock()
		seen[p.URLID] = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("Scan over damaged data: %v", err)
	}
	return seen
}

func TestFlippedBitsAreSkippedAndNamed(t *testing.T) {
	const n = 100
	dir, locs := damagedStore(t, n)
	seg := segmentPath(dir, 1)
	// A bit in a header field, one in a body, one in a magic.
	damage := map[uint64]int64{10: 30, 50: 100, 70: 1}
	for id, at := range damage {
		if id%5 == 3 {
			t.Fatalf("page %d has no body; pick another", id)
		}
		flipByte(t, seg, locs[id].off+at)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := uint64(0); id < n; id++ {
		p, err := r.Get(id)
		if _, bad := damage[id]; bad {
			want := fmt.Sprintf("%s at offset %d", seg, locs[id].off)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Get(%d) of a damaged record: %v, want an error with %q", id, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	seen := scanAll(t, r)
	if len(seen) != n-len(damage) {
		t.Fatalf("scan saw %d pages, want %d", len(seen), n-len(damage))
	}
	st := r.Stats()
	if st.Skipped != int64(len(damage)) || len(st.Errors) != len(damage) {
		t.Fatalf("stats %+v, want %d skipped regions", st, len(damage))
	}
	for _, e := range st.Errors {
		var c *Corruption
		if !errors.As(e, &c) || c.File != seg {
			t.Fatalf("reported %v, want a *Corruption in %s", e, seg)
		}
		found := false
		for id := range damage {
			found = found || c.Offset == locs[id].off
		}
		if !found {
			t.Fatalf("corruption reported at offset %d, not at a damaged record", c.Offset)
		}
	}
	// A writer opens the damaged store and appends to it.
	writeStore(t, Config{Dirs: []string{dir}}, n, n+10)
	r2, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if seen := scanAll(t, r2); len(seen) != n+10-len(damage) {
		t.Fatalf("after appending: scan saw %d pages", len(seen))
	}
}

func TestTruncatedSegment(t *testing.T) {
	const n = 60
	dir, locs := damagedStore(t, n)
	seg := segmentPath(dir, 1)
	cut := locs[40].off + 20
	if err := os.Truncate(seg, cut); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{40} {
		if _, err := r.Get(id); err == nil || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "offset") {
			t.Fatalf("Get(%d) past the cut: %v", id, err)
		}
	}
	before := 0 // the pipeline may reorder pages: count by offset
	for _, l := range locs {
		if l.off < locs[40].off {
			before++
		}
	}
	if seen := scanAll(t, r); len(seen) != before {
		t.Fatalf("scan saw %d pages, want the %d before the cut", len(seen), before)
	}
	if r.Skipped() != 1 {
		t.Fatalf("skipped %d regions, want the 1 torn record", r.Skipped())
	}
	r.Close()
	// The cut is before the index checkpoint, so it is damage, not a
	// write cut short: the writer leaves the segment as it is (its pages
	// still counted lost, the torn record still reported, until check
	// --repair) and carries on in a new segment.
	writeStore(t, Config{Dirs: []string{dir}}, 100, 120)
	if fi, err := os.Stat(seg); err != nil || fi.Size() != cut {
		t.Fatalf("%s after the writer: %d bytes, %v; want it left at %d", seg, fi.Size(), err, cut)
	}
	r, err = OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seen := scanAll(t, r); len(seen) != before+20 || r.Skipped() != 1 || r.Stats().Lost != int64(n-before) {
		t.Fatalf("after recovery: scan saw %d pages (want %d), skipped %d, lost %d (want %d)", len(seen), before+20, r.Skipped(), r.Stats().Lost, n-before)
	}
}

// reopenLogged opens a writer on dir and closes it, returning what it
// logged.
func reopenLogged(t *testing.T, dir string) []string {
	t.Helper()
	var logged []string
	s, err := Open(Config{Dirs: []string{dir}, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return logged
}

// TestCheckSaysCrashLeftovers: a check that finds only what a write cut
// short leaves (here half a record after the last one, and a header slot
// torn) says the next writer mends it; with other damage beside, it asks
// for a repair.
func TestCheckSaysCrashLeftovers(t *testing.T) {
	const n = 20
	dir, locs := damagedStore(t, n)
	seg := segmentPath(dir, 1)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	half := b[locs[3].off : locs[3].off+40] // a record's first 40 bytes
	if err := os.WriteFile(seg, append(b, half...), 0o644); err != nil {
		t.Fatal(err)
	}
	flipByte(t, filepath.Join(dir, indexName), 25) // slot 0's checkpoint
	var out strings.Builder
	if problems, err := Check(dir, false, &out); problems != 2 || err != nil || !strings.Contains(out.String(), "the next writer mends it") {
		t.Fatalf("check: %d problems, %v:\n%s", problems, err, out.String())
	}
	flipByte(t, seg, locs[5].off+70) // inside a record: damage a crash does not leave
	out.Reset()
	if problems, err := Check(dir, false, &out); problems != 3 || err != nil || strings.Contains(out.String(), "mends") || !strings.Contains(out.String(), "--repair to rebuild") {
		t.Fatalf("check with damage beside: %d problems, %v:\n%s", problems, err, out.String())
	}
	reopenLogged(t, dir) // the writer: truncates the tail, rewrites the slot
	out.Reset()
	if problems, _ := Check(dir, false, &out); problems != 1 {
		t.Fatalf("check after a writer: %d problems, want the one damaged record:\n%s", problems, out.String())
	}
}

// A writer killed while creating a segment leaves it empty or with half a
// header: a Reader takes it as empty, the next writer rewrites it.
func TestTornSegmentCreation(t *testing.T) {
	for _, size := range []int{0, 7, 24} {
		dir, _ := damagedStore(t, 20)
		torn := segmentPath(dir, 2)
		if err := os.WriteFile(torn, encodeSegmentHeader(2, newStoreID())[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatalf("header of %d bytes: %v", size, err)
		}
		if seen := scanAll(t, r); len(seen) != 20 || r.Skipped() != 0 {
			t.Fatalf("header of %d bytes: scan saw %d pages, %d damaged", size, len(seen), r.Skipped())
		}
		r.Close()
		writeStore(t, Config{Dirs: []string{dir}}, 20, 30)
		checkStore(t, []string{dir}, 0, 30)
	}
}

// TestTruncatedLastSegmentCountsLostPages cuts the last segment before the
// index checkpoint: every page the index had behind the cut is lost, not
// only the one torn by it (before, pages beyond the end of the last
// segment were taken for a live writer's and not counted).
func TestTruncatedLastSegmentCountsLostPages(t *testing.T) {
	const n = 60
	for _, cut := range []string{"mid-record", "empty"} {
		t.Run(cut, func(t *testing.T) {
			dir, locs := damagedStore(t, n)
			seg := segmentPath(dir, 1)
			size := locs[40].off + 20
			if cut == "empty" {
				size = 0
			}
			if err := os.Truncate(seg, size); err != nil {
				t.Fatal(err)
			}
			r, err := OpenReader([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			seen := scanAll(t, r)
			if st := r.Stats(); st.Lost != int64(n-len(seen)) {
				t.Fatalf("%d pages lost, want %d (%d of %d read back): %v", st.Lost, n-len(seen), len(seen), n, st.Errors)
			}
		})
	}
}

// A durable record damaged at the very end of the last segment, after the
// index checkpoint (as a crash leaves it, the checkpoint behind), looked
// like a write cut short: the next writer truncated it away and appended
// the next page in its place, so its index entry pointed at another page
// and the damaged bytes were gone. The index has the record, so it was
// durable: now it is kept for kspider check and new pages go to a new
// segment.
func TestDamagedDurableTailIsKept(t *testing.T) {
	const n = 30
	dir, spans := layoutStore(t, Config{}, n)
	var last recordSpan
	var lastID uint64
	for id, sp := range spans {
		if sp.off > last.off {
			last, lastID = sp, id
		}
	}
	// The checkpoint back at the start of the segment, as a crash before
	// the next checkpoint leaves it, and the last record damaged.
	ix, err := openIndex(filepath.Join(dir, indexName), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.setCheckpoint(1, segmentHeaderSize); err != nil {
		t.Fatal(err)
	}
	ix.close()
	seg := segmentPath(dir, 1)
	flipByte(t, seg, last.end-5)
	logged := reopenLogged(t, dir)
	if !strings.Contains(strings.Join(logged, "\n"), "not a write cut short") {
		t.Errorf("the writer's open did not say the tail is damage: %q", logged)
	}
	if fi, err := os.Stat(seg); err != nil || fi.Size() != last.end {
		t.Fatalf("segment after the writer's open: %v, %v; want its %d bytes kept", fi.Size(), err, last.end)
	}
	writeStore(t, Config{Dirs: []string{dir}}, n, n+10)

	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(lastID); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%s at offset %d", seg, last.off)) {
		t.Errorf("Get(%d) of the damaged page: %v, want the damage at %s offset %d", lastID, err, seg, last.off)
	}
	seen := scanAll(t, r)
	if st := r.Stats(); len(seen) != n+9 || st.Lost != 1 || st.Skipped != 1 {
		t.Errorf("scan: %d pages, %d lost, %d regions skipped; want %d, 1, 1: %v", len(seen), st.Lost, st.Skipped, n+9, st.Errors)
	}
	r.Close()
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	r, err = OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seen := scanAll(t, r); len(seen) != n+9 || r.Stats().Damaged() {
		t.Errorf("after the repair: %d pages, want %d: %v", len(seen), n+9, r.Stats().Errors)
	}
	if _, err := os.Stat(filepath.Join(dir, DamagedDir, segmentName(1))); err != nil {
		t.Errorf("the damaged segment was not kept in %s: %v", DamagedDir, err)
	}
}

// The same durable last record with its header damaged (its magic) or the
// segment cut inside it: the writer looked for an intact record header in
// the region to ask the index about, found none, took the region for a
// write cut short and cut it away, so the damaged page's bytes were gone
// and its entry pointed at the next page written there. The record's URL
// id field is now asked about as well: the index has the record there.
func TestDamagedDurableTailHeaderIsKept(t *testing.T) {
	const n = 30
	for _, c := range []string{"magic", "cut"} {
		t.Run(c, func(t *testing.T) {
			dir, spans := layoutStore(t, Config{}, n)
			var last recordSpan
			for _, sp := range spans {
				if sp.off > last.off {
					last = sp
				}
			}
			ix, err := openIndex(filepath.Join(dir, indexName), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.setCheckpoint(1, segmentHeaderSize); err != nil {
				t.Fatal(err)
			}
			ix.close()
			seg := segmentPath(dir, 1)
			size := last.end
			if c == "magic" {
				flipByte(t, seg, last.off+1)
			} else {
				size = last.off + 30
				if err := os.Truncate(seg, size); err != nil {
					t.Fatal(err)
				}
			}
			logged := reopenLogged(t, dir)
			if !strings.Contains(strings.Join(logged, "\n"), "not a write cut short") {
				t.Errorf("the writer's open did not say the tail is damage: %q", logged)
			}
			if fi, err := os.Stat(seg); err != nil || fi.Size() != size {
				t.Fatalf("segment after the writer's open: %v, %v; want its %d bytes kept", fi.Size(), err, size)
			}
			writeStore(t, Config{Dirs: []string{dir}}, n, n+5)
			r, err := OpenReader([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if seen := scanAll(t, r); len(seen) != n+4 || r.Stats().Lost != 1 {
				t.Errorf("scan: %d pages, %d lost; want %d, 1: %v", len(seen), r.Stats().Lost, n+4, r.Stats().Errors)
			}
		})
	}
}
