package main

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCluster: kspider check reads DIR/CLUSTER (a cluster node's
// record of the end and of its peers' lost shares) as the node's start
// does: ok with what it says; damaged at a random byte, named, exit 1 (the
// node would refuse to start, where check said nothing of it).
func TestCheckCluster(t *testing.T) {
	dir := t.TempDir()
	body := "kspider cluster 1\nover\nlost_dir 2\nlost_urls 1 512\n"
	good := []byte(body + fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))))
	path := filepath.Join(dir, "CLUSTER")
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "cluster: " + path + ": ok: the crawl was over; node 2 came back with a new data directory; 512 URLs of node 1 taken before its hello under a block giving other owners"
	if code, out, _ := runCmd(t, "", "check", "--data", dir); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("check: exit %d:\n%s\nwant %q", code, out, want)
	}
	for range 20 {
		b := append([]byte(nil), good...)
		b[rand.IntN(len(b))] ^= byte(1 << rand.IntN(8))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runCmd(t, "", "check", "--data", dir)
		if code != 1 || !strings.Contains(out, "cluster: spider: "+path+" is damaged") || !strings.Contains(out, "cannot repair") {
			t.Fatalf("check of %q: exit %d:\n%s", b, code, out)
		}
	}
}
