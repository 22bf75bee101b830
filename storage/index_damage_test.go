package storage

// Damage to the index (url.idx): its header slots, its entries, an index
// lost or of no use; the segments answer for what it lost.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDamagedIndexIsRebuilt(t *testing.T) {
	const n = 50
	dir, _ := damagedStore(t, n)
	ix := filepath.Join(dir, indexName)
	flipByte(t, ix, 5)               // the version
	flipByte(t, ix, indexSlotSize+5) // in both header slots
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Error(), ix) {
		t.Fatalf("damaged index not reported: %v", st.Errors)
	}
	for id := uint64(0); id < n; id++ {
		if _, err := r.Get(id); err != nil {
			t.Fatalf("Get(%d) without a usable index: %v", id, err)
		}
	}
	r.Close()
	if logged := reopenLogged(t, dir); len(logged) == 0 || !strings.Contains(logged[0], "rebuilding") {
		t.Fatalf("writer did not say it rebuilt the index: %q", logged)
	}
	checkStore(t, []string{dir}, 0, n)
}

// TestTornHeaderSlot: with one header slot damaged, as a writer killed in
// the middle of a checkpoint leaves it, the index is used through the
// other (no rebuild); the damage is reported, the writer says so, and its
// next checkpoint rewrites the slot.
func TestTornHeaderSlot(t *testing.T) {
	const n = 50
	for slot := range 2 {
		dir, _ := damagedStore(t, n)
		ix := filepath.Join(dir, indexName)
		flipByte(t, ix, int64(slot*indexSlotSize+25)) // the checkpoint's offset
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		var th *TornHeader
		st := r.Stats()
		if len(st.Errors) != 1 || !errors.As(st.Errors[0], &th) || th.Slot != slot || !strings.Contains(st.Errors[0].Error(), ix) {
			t.Fatalf("slot %d: damage not reported as a torn slot: %v", slot, st.Errors)
		}
		if r.dirs[0].view.Load().rebuilt || r.dirs[0].ix == nil {
			t.Fatalf("slot %d: the index was not used", slot)
		}
		for id := uint64(0); id < n; id++ {
			if _, err := r.Get(id); err != nil {
				t.Fatalf("slot %d: Get(%d): %v", slot, id, err)
			}
		}
		r.Close()
		if logged := reopenLogged(t, dir); len(logged) != 1 || !strings.Contains(logged[0], "as a checkpoint interrupted by a crash leaves") {
			t.Fatalf("slot %d: the writer said %q", slot, logged)
		}
		if problems, err := Check(dir, false, new(strings.Builder)); problems != 0 || err != nil {
			t.Fatalf("slot %d: check after the writer's checkpoint: %d problems, %v", slot, problems, err)
		}
		checkStore(t, []string{dir}, 0, n)
	}
}

// TestReindexSaysSo: a writer that must index a store of several segments
// anew (its index damaged beyond use, or of an older format) says so before
// it reads them all, then finds every page.
func TestReindexSaysSo(t *testing.T) {
	const n = 60
	dir, _ := layoutStore(t, smallSegments(), n)
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 3 {
		t.Fatalf("want several segments, have %v (%v)", segs, err)
	}
	ix := filepath.Join(dir, indexName)
	flipByte(t, ix, 5)
	flipByte(t, ix, indexSlotSize+5)
	logged := reopenLogged(t, dir)
	want := fmt.Sprintf("indexing all %d segments", len(segs))
	if len(logged) < 2 || !strings.Contains(logged[0], "rebuilding") || !strings.Contains(logged[1], want) {
		t.Fatalf("the writer said %q, want %q after the rebuild's reason", logged, want)
	}
	checkStore(t, []string{dir}, 0, n)
}

func TestMissingIndexEntriesAreRebuilt(t *testing.T) {
	const n = 50
	dir, _ := damagedStore(t, n)
	// Forget everything the index knew, as if it had never been synced.
	if err := createIndex(filepath.Join(dir, indexName)); err != nil {
		t.Fatal(err)
	}
	checkStore(t, []string{dir}, 0, n) // the reader indexes in memory
	writeStore(t, Config{Dirs: []string{dir}}, n, n+5)
	checkStore(t, []string{dir}, 0, n+5)
}

// A writer killed between put's three stores leaves an entry whose CRC
// field is still zero, after the checkpoint: the segments answer for those
// ids, so Get needs no rebuild, whether its id has a record after the
// checkpoint (Get finds it) or not (a "none" entry put below a higher
// id), and the check reports them as torn (TornEntries), not as lost.
func TestTornEntryAfterCheckpoint(t *testing.T) {
	const n = 50
	dir, _ := damagedStore(t, n)
	ixPath := filepath.Join(dir, indexName)
	ix, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	header := append([]byte(nil), ix[:indexHeaderSize]...)
	writeStore(t, Config{Dirs: []string{dir}}, n, n+5)
	// Back to the checkpoint of the first n pages (dense n), as if the
	// crash came before the next one; then tear entries above it.
	f, err := os.OpenFile(ixPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := func(id uint64, seg uint32, off uint64) {
		var e [indexEntrySize]byte
		binary.LittleEndian.PutUint32(e[:], seg)
		binary.LittleEndian.PutUint64(e[4:], off)
		// The CRC store never ran: the field holds what it held, zero.
		if _, err := f.WriteAt(e[:], entryOffset(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteAt(header, 0); err != nil {
		t.Fatal(err)
	}
	torn(n+2, 1, 12345)    // a page's, with a record after the checkpoint
	torn(n+9, 0, 1<<64-1)  // a "none" entry's
	torn(n+10, 0, 1<<64-1) // below the id set last
	torn(n+11, 1, 999)     // and that id's own, its record torn too
	f.Close()

	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if seen := scanAll(t, r); len(seen) != n+5 || r.Skipped() != 0 {
		t.Fatalf("scan saw %d pages (want %d), skipped %d", len(seen), n+5, r.Skipped())
	}
	for id := uint64(0); id < n+5; id++ {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	for _, id := range []uint64{n + 9, n + 10, n + 11} {
		if _, err := r.Get(id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%d) of a torn entry with no record: %v, want ErrNotFound", id, err)
		}
	}
	onlyTorn := func(what string, errs []error, lost int64) {
		t.Helper()
		var te *TornEntries
		if len(errs) != 1 || !errors.As(errs[0], &te) || te.N != 4 || te.First != n+2 || lost != 0 {
			t.Fatalf("%s: want one report of 4 torn entries from URL id %d, nothing lost; got %v (lost %d)", what, n+2, errs, lost)
		}
	}
	st := r.Stats()
	onlyTorn("reader", st.Errors, st.Lost)
	var out strings.Builder
	st, err = checkOnce(dir, &out)
	if err != nil {
		t.Fatal(err)
	}
	onlyTorn("check", st.Errors, st.Lost)
	r.Close()
	// Damage, each alone: an entry above the checkpoint's dense with a set
	// but wrong CRC and no record after the checkpoint (junk, not a torn
	// put); the same tear as above below dense.
	for _, c := range []struct {
		name string
		id   uint64
		e    [indexEntrySize]byte
	}{
		{"junk above dense", n + 20, [indexEntrySize]byte{1, 0, 0, 0, 7, 7, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}},
		{"torn below dense", 7, [indexEntrySize]byte{1, 0, 0, 0, 0x39, 0x30}},
	} {
		d := copyDir(t, dir)
		f, err := os.OpenFile(filepath.Join(d, indexName), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(c.e[:], entryOffset(c.id)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, err := OpenReader([]string{d})
		if err != nil {
			t.Fatal(err)
		}
		scanAll(t, r)
		st := r.Stats()
		r.Close()
		reported := false
		for _, e := range st.Errors {
			var te *TornEntries
			reported = reported || !errors.As(e, &te) && errors.Is(e, ErrCorrupt) && strings.Contains(e.Error(), fmt.Sprintf("URL id %d ", c.id))
		}
		if !reported {
			t.Errorf("%s: not reported as damage: %v", c.name, st.Errors)
		}
	}
}

// An index entry that passes its CRC but points at another id's record,
// or into the middle of a record, names a page the directory does not
// hold: a writer that cut a damaged record away as a torn tail and wrote
// the next one in its place leaves such an entry. Get said so, but a Scan
// and kspider check found nothing wrong and passed ("ok"), the page lost
// without a word. Now they count it lost and report the index.
func TestIndexEntryPointingElsewhere(t *testing.T) {
	const n = 50
	for _, c := range []struct {
		name  string
		delta int64 // from the start of page 30's record
	}{{"another id's record", 0}, {"inside a record", 8}} {
		t.Run(c.name, func(t *testing.T) {
			dir, locs := damagedStore(t, n)
			ixPath := filepath.Join(dir, indexName)
			ix, err := openIndex(ixPath, true)
			if err != nil {
				t.Fatal(err)
			}
			const stray = n + 10 // an id the directory holds no record of
			ck := location{ix.ckSeg, ix.ckOff}
			if err := ix.set(stray, locs[30].seg, locs[30].off+c.delta); err != nil {
				t.Fatal(err)
			}
			if err := ix.setCheckpoint(ck.seg, ck.off); err != nil {
				t.Fatal(err)
			}
			ix.close()

			r, err := OpenReader([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			if p, err := r.Get(stray); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get(%d) = %v, %v; want damage", uint64(stray), p, err)
			}
			if seen := scanAll(t, r); len(seen) != n {
				t.Fatalf("scan saw %d pages, want %d", len(seen), n)
			}
			if st := r.Stats(); st.Lost != 1 || !strings.Contains(fmt.Sprint(st.Errors), ixPath) {
				t.Fatalf("lost %d, want 1, with damage naming %s: %v", st.Lost, ixPath, st.Errors)
			}
			r.Close()

			var out strings.Builder
			if problems, err := Check(dir, false, &out); problems == 0 || err != nil {
				t.Fatalf("check: %d problems, %v:\n%s", problems, err, out.String())
			}
			if _, err := Check(dir, true, &out); err != nil {
				t.Fatalf("check --repair: %v\n%s", err, out.String())
			}
			checkStore(t, []string{dir}, 0, n)
		})
	}
}

// A put over an entry written before the checkpoint - a refetch's, or a
// record's over the "none" entry put when a higher id came to this
// directory first (two compressors reorder pages) - torn by a kill leaves
// an entry failing its CRC below the checkpoint's dense, its record after
// the checkpoint. The segments answer for that id, as for a torn entry
// above dense, and the next writer rewrites it: a crash's leftover, not
// damage for kspider check --repair.
func TestTornPutOverEarlierEntry(t *testing.T) {
	for _, c := range []struct {
		name  string
		first []uint64 // ids stored before the checkpoint
		again uint64   // the id stored after it
	}{
		{"over a none entry", []uint64{0, 1, 2, 3, 4, 6, 7, 8, 9}, 5},
		{"refetch", []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			put := func(ids ...uint64) {
				s, err := Open(Config{Dirs: []string{dir}})
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if err := s.Put(context.Background(), testPage(id)); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			ixPath := filepath.Join(dir, indexName)
			put(c.first...)
			before, err := os.ReadFile(ixPath)
			if err != nil {
				t.Fatal(err)
			}
			put(c.again)
			after, err := os.ReadFile(ixPath)
			if err != nil {
				t.Fatal(err)
			}
			// Back to the first checkpoint, and the entry as put leaves it
			// killed after its segment and offset stores, before the CRC's.
			at := entryOffset(c.again)
			e := append([]byte(nil), after[at:at+indexEntrySize]...)
			copy(e[12:], before[at+12:at+indexEntrySize])
			f, err := os.OpenFile(ixPath, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt(before[:indexHeaderSize], 0)
			if err == nil {
				_, err = f.WriteAt(e, at)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			st, err := checkOnce(dir, &out)
			if err != nil {
				t.Fatal(err)
			}
			var te *TornEntries
			if !crashLeftovers(st) || len(st.Errors) != 1 || !errors.As(st.Errors[0], &te) || te.First != c.again {
				t.Fatalf("check: want one torn entry of URL id %d, a crash's leftover; got:\n%s", c.again, out.String())
			}
			checkStore(t, []string{dir}, 0, 10)
			put() // a writer's recovery rewrites the entry
			if st, err := checkOnce(dir, &out); err != nil || st.Damage != 0 {
				t.Fatalf("check after recovery: %v, %d problems:\n%s", err, st.Damage, out.String())
			}
		})
	}
}

// TestRebuiltIndexCountsLostPages: damaged records are pages lost whether
// the index is sound or, damaged too, replaced by a view rebuilt from the
// segments: the tools report Lost, and a rebuild once said none.
func TestRebuiltIndexCountsLostPages(t *testing.T) {
	const n = 100
	damage := []uint64{10, 50}
	for _, indexDamaged := range []bool{false, true} {
		dir, locs := damagedStore(t, n)
		seg := segmentPath(dir, 1)
		for _, id := range damage {
			flipByte(t, seg, locs[id].off+30)
		}
		if indexDamaged {
			flipByte(t, filepath.Join(dir, indexName), entryOffset(70)+2) // a page still intact
		}
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if seen := scanAll(t, r); len(seen) != n-len(damage) {
			t.Fatalf("index damaged %v: scan saw %d pages, want %d", indexDamaged, len(seen), n-len(damage))
		}
		if rebuilt := r.dirs[0].view.Load().rebuilt; rebuilt != indexDamaged {
			t.Fatalf("index damaged %v: view rebuilt %v", indexDamaged, rebuilt)
		}
		st := r.Stats()
		var inRegions int64
		for _, e := range st.Errors {
			var c *Corruption
			if errors.As(e, &c) {
				inRegions += c.Lost
			}
		}
		if st.Lost != int64(len(damage)) || inRegions != int64(len(damage)) {
			t.Fatalf("index damaged %v: lost %d (%d in the regions reported), want %d: %v", indexDamaged, st.Lost, inRegions, len(damage), st.Errors)
		}
		r.Close()
	}
}

// A rebuild's message named the one entry that set it off, whether the
// index had one bad entry or thousands; kspider get, stats and check said
// nothing of the rest. Now it says how many fail, naming the first.
func TestRebuildSaysHowManyEntriesAreDamaged(t *testing.T) {
	const n = 50
	for _, c := range []struct {
		damaged []uint64
		want    string
	}{
		{[]uint64{30}, "(1 entry of the index fails its CRC-32C or is zeroed: URL id 30's, at offset "},
		{[]uint64{12, 30, 31, 44}, "(4 entries of the index fail their CRC-32C or are zeroed, the first URL id 12's, at offset "},
	} {
		dir, _ := damagedStore(t, n)
		ix := filepath.Join(dir, indexName)
		for _, id := range c.damaged {
			flipByte(t, ix, entryOffset(id)+2)
		}
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		for id := uint64(0); id < n; id++ { // Get 30 rebuilds the view
			p, err := r.Get(id)
			if err != nil {
				t.Fatalf("Get(%d): %v", id, err)
			}
			samePage(t, p, testPage(id))
		}
		st := r.Stats()
		r.Close()
		if len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Error(), c.want) ||
			!strings.Contains(st.Errors[0].Error(), "index rebuilt in memory") {
			t.Errorf("%d entries damaged: %v, want one error saying %q", len(c.damaged), st.Errors, c.want)
		}
	}
}

// A Scan meeting a damaged index entry rebuilds the directory's view from
// every segment, as long as the Scan itself: kspider stats and export
// could not be interrupted through it (Ctrl-C said 'stopping in order'
// and the rebuild read on to its end). Now the rebuild ends with the
// Scan's context, the view left as it was, and a later lookup rebuilds it.
func TestRebuildEndsWithTheScan(t *testing.T) {
	const n = 50
	dir, _ := damagedStore(t, n)
	flipByte(t, filepath.Join(dir, indexName), entryOffset(30)+2)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	// The pause before a failing entry is read again comes just before
	// the rebuild: the interrupt lands there.
	r.rereadWait = cancel
	if err := r.Scan(ctx, func(*Page) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted scan: %v, want context.Canceled", err)
	}
	if r.dirs[0].view.Load().rebuilt {
		t.Fatal("the interrupted scan rebuilt the view from every segment")
	}
	for _, e := range r.Stats().Errors {
		if strings.Contains(e.Error(), "rebuil") {
			t.Errorf("an interrupted rebuild reported: %v", e)
		}
	}
	r.rereadWait = func() {}
	pages := 0
	if err := r.Scan(context.Background(), func(*Page) error { pages++; return nil }); err != nil || pages != n {
		t.Fatalf("scan after: %d pages, %v, want %d", pages, err, n)
	}
	if !r.dirs[0].view.Load().rebuilt {
		t.Error("the view was not rebuilt by the scan after")
	}
}
