package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// With SyncWhenIdle on, a page is durable as soon as the saver has nothing
// more to write, not after SyncInterval (an hour here): switched on after
// the Put and before it.
func TestSyncWhenIdle(t *testing.T) {
	dir := t.TempDir()
	durable := make(chan uint64, 16)
	s, err := Open(Config{Dirs: []string{dir, filepath.Join(dir, "b")}, SyncEvery: 1 << 20, SyncInterval: time.Hour,
		OnDurable: func(ids []uint64) {
			for _, id := range ids {
				durable <- id
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wait := func(want uint64) {
		t.Helper()
		select {
		case id := <-durable:
			if id != want {
				t.Fatalf("page %d durable, want %d", id, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("page %d not durable after 30 s with SyncWhenIdle on", want)
		}
	}
	if err := s.Put(context.Background(), testPage(1)); err != nil {
		t.Fatal(err)
	}
	s.SyncWhenIdle(true)
	wait(1)
	if err := s.Put(context.Background(), testPage(2)); err != nil {
		t.Fatal(err)
	}
	wait(2)
	// Switched off, the next page waits for the interval (or Close).
	s.SyncWhenIdle(false)
	if err := s.Put(context.Background(), testPage(3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wait(3)
}
