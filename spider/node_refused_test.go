package spider

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
	"golang.org/x/sys/unix"
)

// TestRefusedStartLeavesDir: a start refused after it made its files (a
// damaged DEPTH, found once the tree, scheduler and store are open) or
// before them (a page store of another crawl) removes what it made: the
// IDENTITY it recorded, urls/, sched/, the store's directory, STORES. An
// IDENTITY left by the refused node would refuse the node meant for the
// directory, and an empty urls/ makes the directory no longer new.
func TestRefusedStartLeavesDir(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, DepthFile), []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
	if err == nil {
		n.Close()
	}
	if err == nil || !strings.Contains(err.Error(), DepthFile+" is damaged") {
		t.Fatalf("a start with a damaged %s: %v, want it refused", DepthFile, err)
	}
	if got := dirNames(t, dir); got != DepthFile+" LOCK" {
		t.Errorf("the refused start left %s holding %s, want only %s and LOCK", dir, got, DepthFile)
	}
	if err := os.Remove(filepath.Join(dir, DepthFile)); err != nil {
		t.Fatal(err)
	}

	// Storage directories that hold another crawl's pages: refused
	// before the tree is made, after IDENTITY is recorded.
	other := filepath.Join(tmp, "other")
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 3, MaxPages: 3, MinPages: 2, Seeds: 2, Plain: true}, &bytes.Buffer{})
	if _, err := runNode(t, context.Background(), nodeConfig(t, other, srv, lookup, 1)); err != nil {
		t.Fatal(err)
	}
	n, err = OpenNode(NodeConfig{Dir: dir, StorageDirs: []string{filepath.Join(other, "pages")}, Lookup: noLookup})
	if err == nil {
		n.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "holds pages, but the URL tree in "+dir+" is new") {
		t.Fatalf("a start on another crawl's store: %v, want it refused", err)
	}
	if _, err := ReadDirIdentity(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused start left an %s: %v", IdentityFile, err)
	}
	if got := dirNames(t, dir); got != "LOCK" {
		t.Errorf("the refused start left %s holding %s, want only LOCK", dir, got)
	}
	// What it found stays.
	if got := dirNames(t, other); !strings.Contains(got, "urls") || !strings.Contains(got, "pages") {
		t.Errorf("the refused start took from the directory it was refused for: %s", got)
	}
}

// TestRefusedStartKeepsAnotherStore: a page store directory absent when
// the refused start looked, made since by another node given the same
// directory (a config mistake) and written by it, is not removed with
// what the refused start made: its LOCK is held.
func TestRefusedStartKeepsAnotherStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "pages")
	made := absentPaths(filepath.Join(t.TempDir(), "d"), []string{store})
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.Create(filepath.Join(store, "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "seg-000001"), []byte("another node's pages"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = made.undo()
	if err == nil || !strings.Contains(err.Error(), store+": not removed: another store is writing it") {
		t.Errorf("undo with the store's LOCK held by another: %v, want it named and left", err)
	}
	if _, err := os.Stat(filepath.Join(store, "seg-000001")); err != nil {
		t.Errorf("the other node's store was removed: %v", err)
	}
	unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if err := made.undo(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a store directory the refused start made, its LOCK free, was left: %v", err)
	}
}
