package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// TestCheckPagesOfAnotherTree: a pages/ of another data directory is
// refused by the node's Open (storage.ErrForeign: the store is another
// URL tree's); check said ok and exited 0. Now it is damage naming both
// IDs, and --repair leaves the store as it is.
func TestCheckPagesOfAnotherTree(t *testing.T) {
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.AddString("http://host.example/"); err != nil {
		t.Fatal(err)
	}
	mine := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	other := urltree.ID{1, 2, 3}
	put := func(tree urltree.ID) {
		t.Helper()
		pages := filepath.Join(node, "pages")
		if err := os.RemoveAll(pages); err != nil {
			t.Fatal(err)
		}
		s, err := storage.Open(storage.Config{Dirs: []string{pages}, TreeID: tree})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(context.Background(), &storage.Page{URLID: 0, URL: "http://host.example/", Status: 200, Body: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put(mine)
	if code, out, errOut := runCmd(t, "", "check", "--data", node); code != 0 || !strings.Contains(out, "ok: 1 pages") {
		t.Fatalf("own store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	put(other)
	hex := func(id urltree.ID) string { return fmt.Sprintf("%x", id[:]) }
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	if code != 1 || !strings.Contains(out, hex(mine)) || !strings.Contains(out, hex(other)) ||
		!strings.Contains(out, filepath.Join(node, "pages", "STORE")) {
		t.Fatalf("another tree's store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(out, "not repaired") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(node, "pages", "damaged")); err == nil {
		t.Fatal("repair moved files of another tree's store")
	}
}

// TestCheckNodeStores: a node's pages on other disks (storage.dirs, named
// in DIR/STORES) were not checked by 'check --data DIR', which looked in
// DIR/pages only: a store directory there of another tree (another
// node's, mixed in) or damaged was 'ok', exit 0. Now every directory
// STORES names is checked, held to the URL tree, so to each other.
func TestCheckNodeStores(t *testing.T) {
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.AddString("http://host.example/"); err != nil {
		t.Fatal(err)
	}
	mine := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	other := urltree.ID{4, 5, 6}
	disk2 := filepath.Join(t.TempDir(), "pages")
	put := func(dir string, tree urltree.ID) {
		t.Helper()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		s, err := storage.Open(storage.Config{Dirs: []string{dir}, TreeID: tree})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(context.Background(), &storage.Page{URLID: 0, URL: "http://host.example/", Status: 200, Body: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	put(filepath.Join(node, "pages"), mine)
	put(disk2, mine)
	body := "kspider page stores 1\n\"pages\"\n" + strconv.Quote(disk2) + "\n"
	stores := []byte(body + fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))))
	if err := os.WriteFile(filepath.Join(node, "STORES"), stores, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "", "check", "--data", node); code != 0 || !strings.Contains(out, "pages: "+disk2+": ok: 1 pages") {
		t.Fatalf("own stores: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	put(disk2, other)
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("%x", other[:])) || !strings.Contains(out, filepath.Join(disk2, "STORE")) {
		t.Fatalf("another tree's store on disk2: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
