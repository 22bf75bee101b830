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
