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
)

// nodeWithStores makes a node data directory without a URL tree whose
// pages are in DIR/pages and in disk2, named in DIR/STORES, each a store
// of the given ID (zero: a random one).
func nodeWithStores(t *testing.T, pagesID, disk2ID [16]byte) (node, disk2 string) {
	t.Helper()
	node = t.TempDir()
	disk2 = filepath.Join(t.TempDir(), "pages")
	for _, s := range []struct {
		dir string
		id  [16]byte
	}{{filepath.Join(node, "pages"), pagesID}, {disk2, disk2ID}} {
		st, err := storage.Open(storage.Config{Dirs: []string{s.dir}, TreeID: s.id})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(context.Background(), &storage.Page{URLID: 0, URL: "http://host.example/", Status: 200, Body: []byte("hello")}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	body := "kspider page stores 1\n\"pages\"\n" + strconv.Quote(disk2) + "\n"
	stores := []byte(body + fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))))
	if err := os.WriteFile(filepath.Join(node, "STORES"), stores, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, disk2
}

// TestCheckNodeStoresWithoutTree: with no URL tree ID to hold them to (no
// urls/, or a tree from before identities), a node's store directories
// were not compared with each other, so another node's store named in
// STORES beside this one's was 'ok', exit 0, though the node's start
// refuses the two (storage.ErrForeign). Now they are held to each other
// as the start holds them: damage naming both.
func TestCheckNodeStoresWithoutTree(t *testing.T) {
	mine := [16]byte{7, 7, 7}
	node, _ := nodeWithStores(t, mine, mine)
	// One problem, and not the stores': pages beside no URL tree.
	if code, out, errOut := runCmd(t, "", "check", "--data", node); code != 1 || strings.Contains(out, "pages: damage") ||
		!strings.Contains(out, "no URL tree") || !strings.Contains(errOut, "1 problems found") {
		t.Fatalf("one store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	other := [16]byte{8, 8, 8}
	node, disk2 := nodeWithStores(t, mine, other)
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("%x", other[:])) || !strings.Contains(out, fmt.Sprintf("%x", mine[:])) ||
		!strings.Contains(out, filepath.Join(disk2, "STORE")) {
		t.Fatalf("two stores: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckStoreGivenTwice: a store directory named in a node's STORES
// and given with --data too was checked twice, its problems counted
// twice (and with --repair repaired twice). Now once.
func TestCheckStoreGivenTwice(t *testing.T) {
	mine := [16]byte{7, 7, 7}
	node, disk2 := nodeWithStores(t, mine, mine)
	if err := os.Remove(filepath.Join(disk2, "url.idx")); err != nil { // one problem: the index is missing
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--data", node, "--data", disk2},
		{"--data", disk2, "--data", node},
		{"--data", node, "--data", node + "/."},
	} {
		code, out, errOut := runCmd(t, "", append([]string{"check"}, args...)...)
		// The other problem: pages beside no URL tree.
		if code != 1 || strings.Count(out, disk2+": 1 problems") != 1 || !strings.Contains(errOut, "2 problems found") {
			t.Fatalf("check %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
