package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
	"github.com/kspider/kspider/urltree"
)

// TestOfflineToolsTakeNodeDir: get, stats and export accept a node's data
// directory (the store in its pages/) as well as the store's own directory,
// and a directory holding neither is an error naming it.
func TestOfflineToolsTakeNodeDir(t *testing.T) {
	dirs := getTestStore(t, 5)
	node := t.TempDir()
	if err := os.Rename(dirs[0], filepath.Join(node, "pages")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"get", "--data", node, "--data", dirs[1], "2"},
		{"stats", "--data", node, "--data", dirs[1], "--json"},
		{"export", "warc", "--data", node, "--data", dirs[1], "--out", filepath.Join(t.TempDir(), "x.warc.gz")},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 0 {
			t.Errorf("%s on a node's directory: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
	}
	empty := t.TempDir()
	if code, _, errOut := runCmd(t, "", "stats", "--data", empty); code != 1 || !strings.Contains(errOut, empty) {
		t.Errorf("stats on an empty directory: exit %d, want 1 naming it\n%s", code, errOut)
	}
}

// A --data that is a file, a FIFO or a link looping to itself was read as
// a directory, and get, stats and export said 'open F/STORES: not a
// directory', a file the operator never named; now they say what F is.
func TestDataThatIsNoDirectory(t *testing.T) {
	dir := t.TempDir()
	file, fifo, loop := filepath.Join(dir, "file"), filepath.Join(dir, "fifo"), filepath.Join(dir, "loop")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	for data, want := range map[string]string{
		file: "--data " + file + ": a regular file, not a directory",
		fifo: "--data " + fifo + ": a named pipe, not a directory",
		loop: "--data " + loop + ": too many levels of symbolic links",
	} {
		for _, args := range [][]string{
			{"get", "--data", data, "2"},
			{"stats", "--data", data},
			{"export", "warc", "--data", data, "--out", filepath.Join(t.TempDir(), "x.warc.gz")},
		} {
			if code, _, errOut := runCmd(t, "", args...); code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "STORES") {
				t.Errorf("%s: exit %d, want 1 and %q\n%s", strings.Join(args, " "), code, want, errOut)
			}
		}
	}
}

// A node's data directory whose pages/ is a link to a disk not mounted, a
// FIFO, a file or a link looping to itself was refused as 'DIR: no page
// store: no segment files (*.seg) and no index (url.idx)', DIR blamed and
// pages/ not named; now the error says what DIR/pages is.
func TestNodePagesThatIsNoDirectory(t *testing.T) {
	node := t.TempDir()
	pages := filepath.Join(node, "pages")
	for _, c := range []struct {
		make func() error
		want string
	}{
		{func() error { return os.Symlink("/nonexistent/disk9/pages", pages) }, "its page store " + pages + " is a symbolic link to /nonexistent/disk9/pages, which does not exist (a disk not mounted?)"},
		{func() error { return syscall.Mkfifo(pages, 0o644) }, "its page store " + pages + " is a named pipe, not a directory"},
		{func() error { return os.WriteFile(pages, []byte("x"), 0o644) }, "its page store " + pages + " is a regular file, not a directory"},
		{func() error { return os.Symlink("pages", pages) }, "its page store " + pages + ": too many levels of symbolic links"},
	} {
		os.Remove(pages)
		if err := c.make(); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"get", "--data", node, "2"},
			{"stats", "--data", node},
			{"export", "warc", "--data", node, "--out", filepath.Join(t.TempDir(), "x.warc.gz")},
		} {
			if code, _, errOut := runCmd(t, "", args...); code != 1 || !strings.Contains(errOut, "--data "+node+": "+c.want) {
				t.Errorf("%s: exit %d, want 1 and %q\n%s", strings.Join(args, " "), code, c.want, errOut)
			}
		}
	}
}

// One store named twice - as a node's directory and as its pages/, or
// through a symbolic link - is a usage error. Before, it was read twice
// and stats counted its segment bytes twice (half the compression ratio).
func TestOneStoreNamedTwice(t *testing.T) {
	dirs := getTestStore(t, 5)
	node := t.TempDir()
	pages := filepath.Join(node, "pages")
	if err := os.Rename(dirs[0], pages); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(pages, link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"stats", "--data", node, "--data", pages},
		{"get", "--data", pages, "--data", link, "2"},
		{"export", "warc", "--data", node, "--data", link, "--out", filepath.Join(t.TempDir(), "x.warc.gz")},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 || !strings.Contains(errOut, "are the same store") {
			t.Errorf("%s: exit %d, want 2 and 'are the same store'\n%s", strings.Join(args, " "), code, errOut)
		}
	}
}

// TestOfflineToolsTakeNodeStores: a node's data directory whose crawl was
// stored on two disks (storage.dirs: its pages/ and another). The tools
// given the node's directory read its pages/ only: stats counted, and
// export wrote, half the crawl, exit 0. Now they read every directory its
// STORES names (the other one given too is read once), and a damaged
// STORES is an error naming it.
func TestOfflineToolsTakeNodeStores(t *testing.T) {
	const pages = 12
	dirs := getTestStore(t, pages)
	node := t.TempDir()
	if err := os.Rename(dirs[0], filepath.Join(node, "pages")); err != nil {
		t.Fatal(err)
	}
	// DIR/STORES as the node writes it (spider/node_stores.go).
	b := []byte("kspider page stores 1\n" + strconv.Quote("pages") + "\n" + strconv.Quote(dirs[1]) + "\n")
	b = fmt.Appendf(b, "crc32c %08x\n", crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	stores := filepath.Join(node, spider.StoresFile)
	if err := os.WriteFile(stores, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"stats", "--data", node, "--json"}, {"stats", "--data", node, "--data", dirs[1], "--json"}} {
		code, out, errOut := runCmd(t, "", args...)
		var r stats.Report
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Summary.URLs != pages {
			t.Errorf("%s: exit %d, %d URLs (%v), want %d\n%s", strings.Join(args, " "), code, r.Summary.URLs, err, pages, errOut)
		}
	}
	b[len(b)/2] ^= 0x20
	if err := os.WriteFile(stores, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "stats", "--data", node, "--json"); code != 1 || !strings.Contains(errOut, stores) {
		t.Errorf("stats with STORES damaged: exit %d, want 1 naming it\n%s", code, errOut)
	}
}

// TestOfflineToolsHoldStoreToTree: get, export and stats read a node's
// pages/ without looking at its URL tree, so the store of another data
// directory (another tree's, whose URL id 0 is another URL) was read as
// this node's: 'get 0' printed that other page, exit 0. Now the store is
// held to DIR/urls as a node's start holds it: an error naming both IDs;
// store directories given bare are read with a note saying no tree was
// compared.
func TestOfflineToolsHoldStoreToTree(t *testing.T) {
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.AddString("http://mine.example/"); err != nil {
		t.Fatal(err)
	}
	mine := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	pages := filepath.Join(node, "pages")
	put := func(tree urltree.ID, url string) {
		t.Helper()
		if err := os.RemoveAll(pages); err != nil {
			t.Fatal(err)
		}
		s, err := storage.Open(storage.Config{Dirs: []string{pages}, TreeID: tree})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(context.Background(), &storage.Page{URLID: 0, URL: url, Status: 200, Body: []byte("page of " + url)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "x.warc.gz")
	cmds := [][]string{
		{"get", "--data", node, "0"},
		{"export", "warc", "--data", node, "--out", out},
		{"stats", "--data", node},
	}
	put(mine, "http://mine.example/")
	for _, args := range cmds {
		if code, stdout, errOut := runCmd(t, "", args...); code != 0 || errOut != "" {
			t.Fatalf("%v on its own store: exit %d, stdout %q, stderr %q", args, code, stdout, errOut)
		}
	}
	other := urltree.ID{1, 2, 3}
	put(other, "http://other.example/")
	for _, args := range cmds {
		code, stdout, errOut := runCmd(t, "", args...)
		if code != 1 || strings.Contains(stdout, "other.example") ||
			!strings.Contains(errOut, fmt.Sprintf("%x", mine[:])) || !strings.Contains(errOut, fmt.Sprintf("%x", other[:])) {
			t.Errorf("%v on another tree's store: exit %d, stdout %q, stderr %q", args, code, stdout, errOut)
		}
	}
	code, stdout, errOut := runCmd(t, "", "get", "--data", pages, "0")
	if code != 0 || stdout != "page of http://other.example/" || !strings.Contains(errOut, "not compared") {
		t.Errorf("get on the bare store: exit %d, stdout %q, stderr %q", code, stdout, errOut)
	}
}

// TestOfflineToolsReadTheTreeIDAlone: get, export and stats opened the
// node's URL tree to learn its ID, which verifies every entry and, for a
// tree not closed cleanly (a node running, or crashed), rebuilds its node
// array in memory: minutes and gigabytes for a large tree, and a tree
// damaged anywhere refused the reading of an intact store. Now they read
// the ID from the tree's header alone (urltree.ReadID), still holding the
// store to it.
func TestOfflineToolsReadTheTreeIDAlone(t *testing.T) {
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, _, err := tr.AddString(fmt.Sprintf("http://mine.example/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	mine := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(node, "pages")}, TreeID: mine})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), &storage.Page{URLID: 0, URL: "http://mine.example/0", Status: 200, Body: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// An entry of the tree damaged: Open refuses the tree, whose header
	// still names it.
	arena := filepath.Join(node, "urls", "urltree.arena")
	b, err := os.ReadFile(arena)
	if err != nil {
		t.Fatal(err)
	}
	b[64+3] ^= 0x40
	if err := os.WriteFile(arena, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := urltree.Open(filepath.Join(node, "urls"), &urltree.Options{ReadOnly: true}); err == nil {
		t.Fatal("the damaged tree opens")
	}
	out := filepath.Join(t.TempDir(), "x.warc.gz")
	for _, args := range [][]string{
		{"get", "--data", node, "0"},
		{"export", "warc", "--data", node, "--out", out},
		{"stats", "--data", node},
	} {
		if code, stdout, errOut := runCmd(t, "", args...); code != 0 || errOut != "" {
			t.Errorf("%v with the tree damaged past its header: exit %d, stdout %q, stderr %q", args, code, stdout, errOut)
		}
	}
	meta := filepath.Join(node, "urls", "urltree.meta")
	b, err = os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	b[14] ^= 1 // in the ID
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", "get", "--data", node, "0"); code != 1 || !strings.Contains(errOut, meta) {
		t.Errorf("get with the tree's header damaged: exit %d, stderr %q; want 1 naming %s", code, errOut, meta)
	}
}
