package spider

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/tools/testweb"
)

// TestOldSchedBesideNewTree: a sched/ from before the tree IDs (scheduler
// format 3) put in a data directory with no URL tree (copied without its
// urls/) was compared with the new, empty tree the node made, which has
// no URL at any of its ids: nothing to compare, so the node gave it the
// tree's ID, taking another tree's URL states for its own. Now the start
// is refused, naming the sched/ and what to do, and its files are left
// as they were.
func TestOldSchedBesideNewTree(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	srv, lookup := startWeb(t, testweb.Config{Hosts: 4, Seed: 10, MaxPages: 3, MinPages: 2, Seeds: 4, Plain: true}, &bytes.Buffer{})
	if _, err := runNode(t, context.Background(), nodeConfig(t, a, srv, lookup, 1)); err != nil {
		t.Fatal(err)
	}
	// As a kspider before format 3 wrote them: the old version, no ID.
	for name, version := range map[string]uint32{"sched.meta": 1, "sched.states": 2, "sched.hosts": 1, "sched.names": 1} {
		path := filepath.Join(a, "sched", name)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(raw[8:], version)
		clear(raw[12:64])
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(b, "sched")
	if err := os.Rename(filepath.Join(a, "sched"), sched); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(sched, "sched.meta")
	before, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(NodeConfig{Dir: b, Lookup: noLookup})
	if err == nil {
		n.Close()
	}
	if !errors.Is(err, scheduler.ErrForeign) || !strings.Contains(err.Error(), meta) || !strings.Contains(err.Error(), "move "+sched+" away") {
		t.Fatalf("a node on an old sched/ beside a new tree: %v, want scheduler.ErrForeign naming %s and saying to move %s away", err, meta, sched)
	}
	if now, _ := os.ReadFile(meta); !bytes.Equal(now, before) {
		t.Errorf("the refused start changed %s", meta)
	}
	// Nothing else was made (node_refused.go): the URL tree the refusal
	// says to put back goes where the start looks for it, not inside an
	// empty one the refused start left.
	if got := dirNames(t, b); got != "LOCK sched" {
		t.Errorf("the refused start left %s holding %s, want only LOCK and sched", b, got)
	}
	if err := os.Rename(filepath.Join(a, treeSubdir), filepath.Join(b, treeSubdir)); err != nil {
		t.Errorf("putting back the URL tree: %v", err)
	}
}

// dirNames is the names in dir, sorted, space-separated.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}
