package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// When the last segments, which the index checkpoint names, were gone
// (deleted, or the directory restored from an older copy), the next
// writer went on under their numbers: the index's entries for the lost
// pages then named other pages' records, and check reported "entries
// point at no record" instead of the missing segments. The writer now
// says so and starts after the checkpoint's segment, so the gap shows.
func TestMissingLastSegmentsAreNotReused(t *testing.T) {
	const n = 80
	dir, spans := layoutStore(t, smallSegments(), n)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := nums[len(nums)-1]
	for _, k := range []uint32{last - 1, last} {
		if err := os.Remove(segmentPath(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	lost := map[uint64]bool{}
	for id, sp := range spans {
		if sp.seg >= last-1 {
			lost[id] = true
		}
	}
	logged := strings.Join(reopenLogged(t, dir), "\n")
	if !strings.Contains(logged, segmentName(last)+", which the index checkpoint names, is missing") {
		t.Errorf("the writer's open did not say the segments are missing: %q", logged)
	}
	writeStore(t, Config{Dirs: []string{dir}, SegmentSize: 24 << 10}, n, n+40)
	for _, k := range []uint32{last - 1, last} {
		if _, err := os.Stat(segmentPath(dir, k)); err == nil {
			t.Fatalf("%s was written again", segmentName(k))
		}
	}

	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint64(n + 40) {
		p, err := r.Get(id)
		switch {
		case lost[id] && !errors.Is(err, ErrCorrupt):
			t.Fatalf("Get(%d) of a page in a missing segment: %v, %v; want damage", id, p, err)
		case !lost[id] && err != nil:
			t.Fatalf("Get(%d): %v", id, err)
		case !lost[id]:
			samePage(t, p, testPage(id))
		}
	}
	seen := scanAll(t, r)
	st := r.Stats()
	if len(seen) != n+40-len(lost) || st.Lost != int64(len(lost)) || !strings.Contains(fmt.Sprint(st.Errors), "missing") {
		t.Fatalf("scan: %d pages, %d lost; want %d, %d, with the missing segments reported: %v", len(seen), st.Lost, n+40-len(lost), len(lost), st.Errors)
	}
	r.Close()
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
}

// The last segment cut at a record boundary before the index checkpoint:
// the writer appended the next pages at the offsets where the index still
// had the lost ones. It now starts a new segment, and check counts the
// pages lost beyond the cut.
func TestTruncatedLastSegmentIsNotAppendedTo(t *testing.T) {
	const n = 80
	dir, spans := layoutStore(t, smallSegments(), n)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := nums[len(nums)-1]
	// Cut after the first record of the last segment.
	var cut int64 = -1
	for _, sp := range spans {
		if sp.seg == last && sp.off == segmentHeaderSize {
			cut = sp.end
		}
	}
	lost := 0
	for _, sp := range spans {
		if sp.seg == last && sp.off >= cut {
			lost++
		}
	}
	if cut < 0 || lost == 0 {
		t.Fatalf("the last segment has no second record to lose (cut %d)", cut)
	}
	seg := segmentPath(dir, last)
	if err := os.Truncate(seg, cut); err != nil {
		t.Fatal(err)
	}
	writeStore(t, Config{Dirs: []string{dir}, SegmentSize: 24 << 10}, n, n+20)
	if fi, err := os.Stat(seg); err != nil || fi.Size() != cut {
		t.Fatalf("%s after the writer: %d bytes, %v; want it left at %d", seg, fi.Size(), err, cut)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := scanAll(t, r)
	if st := r.Stats(); len(seen) != n+20-lost || st.Lost != int64(lost) {
		t.Fatalf("scan: %d pages, %d lost; want %d, %d: %v", len(seen), st.Lost, n+20-lost, lost, st.Errors)
	}
}

// A page reported durable whose record is damaged in the tail after the
// index checkpoint (a crash before the next one) lost its index entry at
// the writer's recovery: re-indexing the next record, of a higher URL id,
// filled the entries from the checkpoint's dense mark up to it with "none",
// over the damaged page's, so Get said the page was never stored and no
// scan counted it lost. Now an entry set after the checkpoint is kept, and
// Get names the damage.
func TestRecoveryKeepsTheEntryOfADamagedTailPage(t *testing.T) {
	const n = 10
	dir := t.TempDir()
	// One compressor: the pages are written in the order put.
	cfg := Config{Dirs: []string{dir}, Compressors: 1, Logf: func(string, ...any) {}}
	writeStore(t, cfg, 0, n)
	ixPath := filepath.Join(dir, indexName)
	ix, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	header := ix[:indexHeaderSize]
	writeStore(t, cfg, n, n+3)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	l, ok, _ := r.dirs[0].locate(n)
	r.Close()
	if !ok {
		t.Fatalf("page %d is not indexed", n)
	}
	f, err := os.OpenFile(ixPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(header, 0) // back to the checkpoint of the first n pages
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	seg := segmentPath(dir, l.seg)
	flipByte(t, seg, l.off+recordHeaderSize+10) // in its URL: the record's CRC fails
	reopenLogged(t, dir)

	r, err = OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(n); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%s at offset %d", seg, l.off)) {
		t.Errorf("Get(%d) of the damaged page: %v, want the damage at %s offset %d", n, err, seg, l.off)
	}
	for _, id := range []uint64{n - 1, n + 1, n + 2} {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	if seen := scanAll(t, r); len(seen) != n+2 || r.Stats().Lost != 1 {
		t.Errorf("scan: %d pages, %d lost; want %d, 1: %v", len(seen), r.Stats().Lost, n+2, r.Stats().Errors)
	}
}

// The newest segment cut short (inside its header, or inside its first
// record) after the index checkpoint, its pages reported durable: their
// index entries, beyond the segment's end, were excused as a crash's torn
// tail or a live writer's, so a Reader, and a writer's recovery that
// then cut the rest away as torn, lost them without a word, exit 0 (and
// returned an older fetch from another directory as the latest). An
// entry is set only after its record is synced: with no writer at work,
// one beyond the end is now a page lost.
func TestEntriesBeyondTheEndOfTheNewestSegmentAreLost(t *testing.T) {
	const n = 30
	for _, cut := range []int64{segmentHeaderSize - 5, segmentHeaderSize + 20} {
		for _, writer := range []bool{false, true} {
			t.Run(fmt.Sprintf("cut=%d,writer=%v", cut, writer), func(t *testing.T) {
				dir := t.TempDir()
				cfg := smallSegments()
				cfg.Dirs, cfg.Logf = []string{dir}, func(string, ...any) {}
				writeStore(t, cfg, 0, n)
				ixPath := filepath.Join(dir, indexName)
				ix, err := os.ReadFile(ixPath)
				if err != nil {
					t.Fatal(err)
				}
				writeStore(t, cfg, n, n+20)
				segs, err := listSegments(dir)
				if err != nil {
					t.Fatal(err)
				}
				last := segs[len(segs)-1]
				r, err := OpenReader([]string{dir})
				if err != nil {
					t.Fatal(err)
				}
				inLast := 0
				for id := range uint64(n + 20) {
					if l, ok, _ := r.dirs[0].locate(id); ok && l.seg == last {
						inLast++
					}
				}
				r.Close()
				if h, _, err := readIndexHeader(ixPath, ix[:indexHeaderSize]); err != nil || inLast == 0 || h.ckSeg >= last {
					t.Fatalf("want pages in the newest segment %d after the checkpoint: %d there, checkpoint %+v, %v", last, inLast, h, err)
				}
				f, err := os.OpenFile(ixPath, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.WriteAt(ix[:indexHeaderSize], 0) // back to the first checkpoint
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(segmentPath(dir, last), cut); err != nil {
					t.Fatal(err)
				}
				if writer {
					reopenLogged(t, dir)
				}
				r, err = OpenReader([]string{dir})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				seen := scanAll(t, r)
				if st := r.Stats(); len(seen) != n+20-inLast || !st.Damaged() || st.Lost != int64(inLast) {
					t.Fatalf("scan: %d pages (want %d), damaged %v, %d lost (want %d): %v", len(seen), n+20-inLast, st.Damaged(), st.Lost, inLast, st.Errors)
				}
			})
		}
	}
}
