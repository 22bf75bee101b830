package main

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/tools/stats"
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
