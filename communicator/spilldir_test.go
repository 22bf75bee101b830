package communicator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpillNewFileDirSynced: a spill file the start created had its records
// fsynced by Sync but its directory entry never, so a power cut after the
// first Sync could leave no file, the items Sync had called durable gone
// with it. Now the first Sync of a new file fsyncs its directory too; here
// the directory is gone before that Sync, which so fails instead of
// saying the items are safe.
func TestSpillNewFileDirSynced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "comm")
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.append(1, []byte(testURL(1, 2, 1)))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err = s.syncItems()
	if err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Sync of a new spill file whose directory cannot be fsynced: %v; want an error saying so", err)
	}
	if err := s.syncItems(); err == nil {
		t.Fatal("the next Sync said the items are durable")
	}

	// An existing file's Sync needs no directory fsync, and a new one's
	// only the first.
	dir = t.TempDir()
	s2, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	s2.append(1, []byte(testURL(1, 2, 1)))
	if err := s2.syncItems(); err != nil || s2.newEntry {
		t.Fatalf("first Sync: %v, directory entry still to fsync: %v", err, s2.newEntry)
	}
	if err := s2.close(); err != nil {
		t.Fatal(err)
	}
	s2, err = openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	if s2.newEntry {
		t.Fatal("an existing spill file taken for a new one")
	}
}
