package storage

import (
	"context"
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
