package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordSpan is where one page's record lies.
type recordSpan struct {
	seg      uint32
	off, end int64
}

// layoutStore writes pages [0, n) into a fresh directory with cfg (its
// Dirs set here) and returns it with every record's place.
func layoutStore(t testing.TB, cfg Config, n uint64) (string, map[uint64]recordSpan) {
	t.Helper()
	dir := t.TempDir()
	cfg.Dirs = []string{dir}
	writeStore(t, cfg, 0, n)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	spans := map[uint64]recordSpan{}
	for id := uint64(0); id < n; id++ {
		l, ok, _ := r.dirs[0].locate(id)
		if !ok {
			t.Fatalf("page %d not indexed", id)
		}
		h, _, err := r.dirs[0].readRecord(l, nil)
		if err != nil {
			t.Fatal(err)
		}
		spans[id] = recordSpan{l.seg, l.off, l.off + int64(h.length)}
	}
	return dir, spans
}

// smallSegments makes layoutStore's stores span several segments.
func smallSegments() Config { return Config{SegmentSize: 24 << 10, Compressors: 1} }

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// fault damages b within [lo, hi) and returns the damaged bytes and the
// ranges of the original file it changed (a cut: from the cut to the end).
type fault func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int)

var faults = map[string]fault{
	"bit flip": func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int) {
		i := lo + rng.IntN(hi-lo)
		b[i] ^= 1 << rng.IntN(8)
		return b, [][2]int{{i, i + 1}}
	},
	"zeroed range": func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int) {
		i := lo + rng.IntN(hi-lo)
		j := min(hi, i+1+rng.IntN(600))
		clear(b[i:j])
		return b, [][2]int{{i, j}}
	},
	"truncation": func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int) {
		i := lo + rng.IntN(hi-lo)
		return b[:i], [][2]int{{i, len(b)}}
	},
	"appended junk": func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int) {
		n := len(b)
		junk := make([]byte, 1+rng.IntN(400))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			copy(junk, recordMagic) // looks like the start of a record
		}
		return append(b, junk...), [][2]int{{n, n}}
	},
	"swapped blocks": func(rng *rand.Rand, b []byte, lo, hi int) ([]byte, [][2]int) {
		size := min(1+rng.IntN(512), (hi-lo+1)/2, len(b)/2)
		i := lo + rng.IntN(max(1, hi-lo-size+1))
		i = min(i, len(b)-size)
		// The other block anywhere in the file, not overlapping the first.
		var j int
		for tries := 0; ; tries++ {
			j = rng.IntN(len(b) - size + 1)
			if j+size <= i || j >= i+size || tries > 100 {
				break
			}
		}
		if j < i+size && i < j+size {
			return b, nil // no room: no fault
		}
		tmp := append([]byte(nil), b[i:i+size]...)
		copy(b[i:], b[j:j+size])
		copy(b[j:], tmp)
		return b, [][2]int{{i, i + size}, {j, j + size}}
	},
}

// TestDamageEveryFileKind damages a store's segments, segment headers,
// index and STORE file with every kind of fault at random places and checks the reader
// never lies: no panic, no wrong page, every record outside the damage
// still read (by Scan and by Get), and the damage reported with its file.
func TestDamageEveryFileKind(t *testing.T) {
	const n = 60
	base, spans := layoutStore(t, smallSegments(), n)
	segs, err := listSegments(base)
	if err != nil || len(segs) < 3 {
		t.Fatalf("want several segments, have %v (%v)", segs, err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	type kind struct {
		name string
		file func(rng *rand.Rand) (name string, seg uint32)
		span func(size int) (lo, hi int)
	}
	randomSeg := func(rng *rand.Rand) (string, uint32) {
		n := segs[rng.IntN(len(segs))]
		return segmentName(n), n
	}
	theIndex := func(*rand.Rand) (string, uint32) { return indexName, 0 }
	kinds := []kind{
		{"segment", randomSeg, func(size int) (int, int) { return segmentHeaderSize, size }},
		{"segment header", randomSeg, func(int) (int, int) { return 0, segmentHeaderSize }},
		{"index header", theIndex, func(int) (int, int) { return 0, indexHeaderSize }},
		{"store file", func(*rand.Rand) (string, uint32) { return storeFileName, 0 }, func(size int) (int, int) { return 0, size }},
		{"index entries", theIndex, func(size int) (int, int) {
			return indexHeaderSize, min(size, indexHeaderSize+(n+8)*indexEntrySize)
		}},
	}
	const rounds = 4
	var cases uint64
	for _, k := range kinds {
		for fname, f := range faults {
			for round := range rounds {
				cases++
				rng := rand.New(rand.NewPCG(seed, cases))
				t.Run(fmt.Sprintf("%s/%s/%d", k.name, fname, round), func(t *testing.T) {
					t.Parallel() // the repairs wait on fsync: overlap them
					dir := copyDir(t, base)
					name, seg := k.file(rng)
					path := filepath.Join(dir, name)
					orig, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					lo, hi := k.span(len(orig))
					damaged, changed := f(rng, append([]byte(nil), orig...), lo, hi)
					if err := os.WriteFile(path, damaged, 0o644); err != nil {
						t.Fatal(err)
					}
					intact := func(id uint64) bool {
						sp := spans[id]
						if seg == 0 || sp.seg != seg {
							return true // the index is a cache: every record is intact
						}
						for _, c := range changed {
							if c[0] == c[1] {
								continue // appended: the records are untouched
							}
							if int64(c[0]) < sp.end && sp.off < int64(c[1]) {
								return false
							}
						}
						return true
					}
					// Repairs wait on fsyncs: one round of each is enough.
					checkDamaged(t, dir, path, n, intact, !bytes.Equal(orig, damaged), round < 1)
				})
			}
		}
	}
}

// checkDamaged reads the damaged store in dir and checks what the reader
// says: pages [0, n) were stored, intact(id) tells whether page id's record
// escaped the damage, and changed whether the file at path was changed at
// all.
func checkDamaged(t *testing.T, dir, path string, n uint64, intact func(uint64) bool, changed, repair bool) {
	t.Helper()
	r, err := OpenReader([]string{dir})
	if err != nil {
		if !strings.Contains(err.Error(), dir) {
			t.Fatalf("OpenReader error does not name the directory: %v", err)
		}
		t.Fatalf("OpenReader of a damaged store: %v", err)
	}
	defer r.Close()
	var mu sync.Mutex
	seen := map[uint64]bool{}
	err = r.Scan(context.Background(), func(p *Page) error {
		samePage(t, p, testPage(p.URLID)) // never a wrong page
		mu.Lock()
		defer mu.Unlock()
		if seen[p.URLID] {
			return fmt.Errorf("page %d passed twice", p.URLID)
		}
		seen[p.URLID] = true
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	for id := uint64(0); id < n; id++ {
		if intact(id) && !seen[id] {
			t.Errorf("intact page %d not scanned", id)
		}
		p, err := r.Get(id)
		switch {
		case err == nil:
			samePage(t, p, testPage(id))
		case intact(id):
			t.Errorf("Get(%d) of an intact page: %v", id, err)
		case !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFound):
			t.Errorf("Get(%d): %v, want ErrCorrupt or ErrNotFound", id, err)
		}
	}
	st := r.Stats()
	if changed && !st.Damaged() {
		t.Fatalf("damage to %s not reported (stats %+v)", path, st)
	}
	lost := 0
	for id := uint64(0); id < n; id++ {
		if !seen[id] {
			lost++
		}
	}
	if lost > 0 && !st.Damaged() {
		t.Fatalf("%d pages lost without a word", lost)
	}
	for _, e := range st.Errors {
		if !strings.Contains(e.Error(), dir) {
			t.Errorf("damage report does not name the file: %v", e)
		}
	}
	if t.Failed() {
		t.Fatalf("reported: %v", st.Errors)
	}
	r.Close()
	checkAndRepair(t, dir, n, intact, changed, repair)
}

// checkAndRepair runs Check over the damaged store in dir: it must find the
// damage and, if repair is set, repair it, and leave a store without damage in which every
// intact page reads back, the damaged files kept in damaged/.
func checkAndRepair(t *testing.T, dir string, n uint64, intact func(uint64) bool, changed, repair bool) {
	t.Helper()
	var out strings.Builder
	problems, err := Check(dir, false, &out)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if changed && problems == 0 {
		t.Fatalf("Check found no problem in a damaged store:\n%s", out.String())
	}
	if !repair {
		return
	}
	out.Reset()
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("Check --repair: %v\n%s", err, out.String())
	}
	out.Reset()
	if problems, err := Check(dir, false, &out); problems != 0 || err != nil {
		t.Fatalf("Check after the repair: %d problems, %v\n%s", problems, err, out.String())
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id := uint64(0); id < n; id++ {
		p, err := r.Get(id)
		switch {
		case err == nil:
			samePage(t, p, testPage(id))
		case intact(id) || !errors.Is(err, ErrNotFound):
			t.Fatalf("after the repair: Get(%d): %v", id, err)
		}
	}
}

// A Reader tells a store being written (whose torn tail is a record in
// flight, not damage) from one at rest, without taking the lock itself.
func TestLockedSeesALiveStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if !locked(dir) {
		t.Error("a store being written is not seen as live")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if locked(dir) {
		t.Error("a closed store is seen as live")
	}
}
