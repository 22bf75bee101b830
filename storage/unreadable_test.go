package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badSectors reads a segment file but fails, with EIO, every read that
// touches one of its bad ranges, as a disk with bad sectors does.
type badSectors struct {
	io.ReaderAt
	path string
	bad  [][2]int64 // [from, to)
}

func (b *badSectors) ReadAt(p []byte, off int64) (int, error) {
	for _, r := range b.bad {
		if off < r[1] && off+int64(len(p)) > r[0] {
			return 0, &fs.PathError{Op: "read", Path: b.path, Err: syscall.EIO}
		}
	}
	return b.ReaderAt.ReadAt(p, off)
}

// A read error (EIO: a bad sector) in one segment stopped the whole Scan:
// kspider stats and export failed with it, the pages of every other
// segment and directory unread. Now the unreadable bytes are a damaged
// region like any other: skipped, counted, reported with the file and
// offset, the pages the index had there counted lost, and the scan goes
// on behind them.
func TestUnreadableBlocksAreSkipped(t *testing.T) {
	const n = 120
	dir, spans := layoutStore(t, smallSegments(), n)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(nums) < 4 {
		t.Fatalf("want at least 4 segments, have %d", len(nums))
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A block in the middle of the second segment, and the first block
	// of the third (its header and first records).
	middle, head := nums[1], nums[2]
	bad := map[uint32][2]int64{middle: {8192, 12288}, head: {0, 4096}}
	for seg, rg := range bad {
		sf := r.dirs[0].segs[seg]
		sf.ra = &badSectors{ReaderAt: sf.f, path: sf.path, bad: [][2]int64{rg}}
	}
	var lost uint64
	for _, sp := range spans {
		if rg, ok := bad[sp.seg]; ok && sp.off < rg[1] && sp.end > rg[0] {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no record in the bad blocks")
	}
	var seen map[uint64]bool
	withinDeadline(t, "a scan over unreadable blocks", func() { seen = scanAll(t, r) })
	for id, sp := range spans {
		rg, ok := bad[sp.seg]
		inBad := ok && sp.off < rg[1] && sp.end > rg[0]
		if inBad == seen[id] {
			t.Errorf("page %d (segment %d, %d…%d): seen %v, in a bad block %v", id, sp.seg, sp.off, sp.end, seen[id], inBad)
		}
	}
	st := r.Stats()
	if st.Lost != int64(lost) {
		t.Errorf("Lost = %d, want %d", st.Lost, lost)
	}
	var unreadable int
	for _, e := range st.Errors {
		var c *Corruption
		if errors.As(e, &c) && c.Unreadable {
			unreadable++
			if c.TornTail || !errors.Is(c, syscall.EIO) || !errors.Is(c, ErrCorrupt) || !strings.Contains(c.Error(), "input/output error") {
				t.Errorf("unreadable region reported as %v (torn tail %v)", c, c.TornTail)
			}
		}
	}
	if unreadable < 2 || st.Damage < 2 {
		t.Errorf("%d unreadable regions reported, damage %d, want both bad blocks: %v", unreadable, st.Damage, st.Errors)
	}
	for seg := range bad {
		if !strings.Contains(fmt.Sprint(st.Errors), segmentName(seg)) {
			t.Errorf("segment %s not named: %v", segmentName(seg), st.Errors)
		}
	}
}

// Unreadable blocks at random positions (as bad sectors fail reads through
// the page cache: whole 4 KiB pages) over a store of several segments:
// every page outside them is read, none through them, and the pages the
// index had in them are exactly those counted lost.
func TestRandomUnreadableBlocks(t *testing.T) {
	dir, spans := layoutStore(t, smallSegments(), 150)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 40 {
		rng := rand.New(rand.NewPCG(uint64(round), 40))
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		bad := map[uint32][][2]int64{}
		for k := rng.IntN(6); k >= 0; k-- {
			seg := nums[rng.IntN(len(nums))]
			from := rng.Int64N(r.dirs[0].segs[seg].size) / ioBlock * ioBlock
			bad[seg] = append(bad[seg], [2]int64{from, from + ioBlock*(1+rng.Int64N(3))})
		}
		for seg, rg := range bad {
			sf := r.dirs[0].segs[seg]
			sf.ra = &badSectors{ReaderAt: sf.f, path: sf.path, bad: rg}
		}
		var seen map[uint64]bool
		withinDeadline(t, "a scan over unreadable blocks", func() { seen = scanAll(t, r) })
		var lost int64
		for id, sp := range spans {
			hit := false
			for _, rg := range bad[sp.seg] {
				hit = hit || sp.off < rg[1] && sp.end > rg[0]
			}
			if hit {
				lost++
			}
			if hit == seen[id] {
				t.Errorf("round %d: page %d (segment %d, %d…%d): seen %v, bad blocks %v", round, id, sp.seg, sp.off, sp.end, seen[id], bad[sp.seg])
			}
		}
		if st := r.Stats(); st.Lost != lost {
			t.Errorf("round %d: lost %d, want %d: %v", round, st.Lost, lost, st.Errors)
		}
		r.Close()
	}
}

// A page fetched again whose later record is unreadable (a bad sector):
// the Scan, meeting the older record and failing to read the one the index
// points at, took the index for damaged ("points at … which holds no
// later record of it"), rebuilt its view from all the segments and
// reported the index, not the disk. Now only the unreadable bytes are
// reported, the pages in them counted lost.
func TestUnreadableLaterFetchIsNoIndexDamage(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 30)
	again := testPage(7)
	again.FetchTime = again.FetchTime.Add(time.Hour)
	putPages(t, dir, []*Page{again})
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, ok, _ := r.dirs[0].locate(7)
	if !ok {
		t.Fatal("page 7 not indexed")
	}
	sf := r.dirs[0].segs[l.seg]
	from := l.off / ioBlock * ioBlock
	sf.ra = &badSectors{ReaderAt: sf.f, path: sf.path, bad: [][2]int64{{from, from + ioBlock}}}
	seen := scanAll(t, r)
	if seen[7] {
		t.Error("page 7's older fetch was taken for its latest")
	}
	st := r.Stats()
	if msg := fmt.Sprint(st.Errors); strings.Contains(msg, indexName) || st.Lost == 0 || st.Damage != 1 {
		t.Errorf("damage %d, lost %d: %s; want the unreadable block only, page 7 lost in it", st.Damage, st.Lost, msg)
	}
}
