package storage

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A Reader kept open on a store being written (the node reads pages back
// for their links this way) and a page stored again since OpenReader:
// Get answered from where the page was at OpenReader when that was after
// the index checkpoint, the older fetch, although Get follows the live
// index; and a Scan, a snapshot of OpenReader's moment, skipped the older
// record as superseded by one it does not reach, so the page was in
// neither. Now Get takes the later of the two places, and a Scan takes the
// older record when the later one is beyond its snapshot.
func TestLiveReaderAndARefetch(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 10) // before the checkpoint
	done := make(chan struct{}, 16)
	s, err := Open(Config{Dirs: []string{dir}, SyncEvery: 1, OnDurable: func([]uint64) { done <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(p *Page) {
		t.Helper()
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("page never durable")
		}
	}
	put(testPage(20)) // after the checkpoint
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	again := map[uint64]*Page{}
	for _, id := range []uint64{3, 20} {
		p := testPage(id)
		p.FetchTime = p.FetchTime.Add(time.Hour)
		p.Body = []byte("<html>fetched again</html>")
		put(p)
		again[id] = p
	}
	for id, want := range again {
		p, err := r.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		samePage(t, p, want)
	}
	var mu sync.Mutex
	seen := map[uint64]int{}
	err = r.Scan(context.Background(), func(p *Page) error {
		samePage(t, p, testPage(p.URLID)) // the fetch the snapshot holds
		mu.Lock()
		seen[p.URLID]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{0, 3, 9, 20} {
		if seen[id] != 1 {
			t.Errorf("Scan visited page %d %d times, want once", id, seen[id])
		}
	}
	if len(seen) != 11 || r.Stats().Damaged() {
		t.Errorf("Scan visited %d pages, want 11; damage %v", len(seen), r.Stats().Errors)
	}
}

// A Reader on a live store that looks an entry up while the writer's put
// is storing it (segment, offset, then the CRC) reads a mix that fails
// its CRC. It took that for damage: a rebuild of the directory's view
// from all its segments, and damage reported (export and stats exit
// non-zero) of a store that has none. Now it reads such an entry again
// before it calls it damaged: here the put ends in the first pause.
func TestLiveReaderEntryMidPut(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 10)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const id = 3
	f, whole, mid := entryMidPut(t, dir, id)
	if _, err := f.WriteAt(mid, entryOffset(id)); err != nil {
		t.Fatal(err)
	}
	pauses := 0
	r.rereadWait = func() {
		if pauses++; pauses == 1 {
			if _, err := f.WriteAt(whole, entryOffset(id)); err != nil {
				t.Error(err)
			}
		}
	}
	p, err := r.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	samePage(t, p, testPage(id))
	if st := r.Stats(); st.Damaged() || pauses != 1 {
		t.Errorf("damage %v after %d pauses, want none after 1", st.Errors, pauses)
	}

	// An entry that stays damaged is still damage, after the rereads.
	if _, err := f.WriteAt(mid, entryOffset(id+1)); err != nil {
		t.Fatal(err)
	}
	pauses = 0
	r.rereadWait = func() { pauses++ }
	if _, err := r.Get(id + 1); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); !st.Damaged() || pauses != entryRereads {
		t.Errorf("damage %v after %d pauses, want the entry of %d reported after %d", st.Errors, pauses, id+1, entryRereads)
	}
}

// The same during a Scan's check of the whole index (verifyIndex) of a
// store a writer has open.
func TestLiveScanEntryMidPut(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 10)
	s, err := Open(Config{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const id = 3
	f, whole, mid := entryMidPut(t, dir, id)
	pauses := 0
	r.rereadWait = func() {
		if pauses++; pauses == 1 {
			if _, err := f.WriteAt(whole, entryOffset(id)); err != nil {
				t.Error(err)
			}
		}
	}
	n := 0
	err = r.Scan(context.Background(), func(p *Page) error {
		if p.URLID == 9 { // the last: verifyIndex comes after
			if _, err := f.WriteAt(mid, entryOffset(id)); err != nil {
				t.Error(err)
			}
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Damaged() || n != 10 || pauses != 1 {
		t.Errorf("%d pages, damage %v after %d pauses, want 10, none after 1", n, st.Errors, pauses)
	}
}

// entryMidPut opens dir's index for writing and returns id's entry whole
// and as a put leaves it half done: the offset stored, the CRC not yet.
func entryMidPut(t *testing.T, dir string, id uint64) (f *os.File, whole, mid []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, indexName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	whole = make([]byte, indexEntrySize)
	if _, err := f.ReadAt(whole, entryOffset(id)); err != nil {
		t.Fatal(err)
	}
	mid = append([]byte(nil), whole...)
	mid[4] ^= 0x40
	return f, whole, mid
}
