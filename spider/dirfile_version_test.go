package spider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDirFileNewerVersion: an intact IDENTITY, DEPTH, STORES or CLUSTER of
// a format version above what this build reads (a rollback to an older
// kspider) was said damaged, with advice to delete it: the directory's
// share, the page stores to watch for or the peers' lost shares then
// forgotten. Now it is refused as a newer kspider's, deletion not advised,
// and the node does not start.
func TestDirFileNewerVersion(t *testing.T) {
	// newer gives good, as written, the first line's version set to v,
	// with a checksum line that holds.
	newer := func(good []byte, prefix string, v int) []byte {
		first, rest, _ := bytes.Cut(good, []byte("\n"))
		if !bytes.HasPrefix(first, []byte(prefix)) {
			t.Fatalf("%q does not start with %q", good, prefix)
		}
		b := fmt.Appendf(nil, "%s%d\n%s", prefix, v, rest)
		i := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		return append(b[:i:i], dirFileSum(b[:i])...)
	}
	for _, tc := range []struct {
		name, prefix string
		good         []byte
		newest       int
		read         func(dir string) error
		open         bool // OpenNode of a node alone reads it
	}{
		{IdentityFile, identityHeader, DirIdentity{0, 1, "url"}.encode(), 1,
			func(dir string) error { _, err := ReadDirIdentity(dir); return err }, true},
		{DepthFile, "kspider depth limit ", encodeDepthLimit(3), 1,
			func(dir string) error { _, err := readDepthLimit(dir); return err }, true},
		{StoresFile, "kspider page stores ", encodeStores([]string{"pages"}), 1,
			func(dir string) error { _, err := readStores(dir); return err }, true},
		{ClusterFile, "kspider cluster ", emptyClusterRecord().encode(), clusterRecordVersion,
			func(dir string) error { _, err := readClusterRecord(dir); return err }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.name)
			if tc.open {
				// A directory that holds a crawl, so that every file is read.
				n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
				if err != nil {
					t.Fatal(err)
				}
				n.Close()
			}
			b := newer(tc.good, tc.prefix, tc.newest+1)
			if !dirFileIntact(b) {
				t.Fatalf("%q: checksum does not hold", b)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%s was written by a newer kspider (format version %d; this kspider reads versions ≤ %d): run the kspider that wrote it", path, tc.newest+1, tc.newest)
			check := func(what string, err error) {
				if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "delete") || strings.Contains(err.Error(), "damaged") {
					t.Errorf("%s with %q: %v; want %q, and no advice to delete it", what, b, err, want)
				}
			}
			check("read", tc.read(dir))
			if tc.open {
				n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
				if err == nil {
					n.Close()
				}
				check("OpenNode", err)
			}
			// The same file damaged (its checksum not holding) is still damage.
			b[len(b)-2] ^= 1
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.read(dir); err == nil || strings.Contains(err.Error(), "newer") {
				t.Errorf("read with %q: %v; want it said damaged", b, err)
			}
		})
	}
}
