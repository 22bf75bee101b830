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

// TestDataDirSymlinkedFiles: DIR/LOCK, or the temporary file IDENTITY is
// written through, made a symbolic link to another file (a system file,
// for a node running as root). The lock's pid and the identity were
// written into the link's target, truncating it; now a linked LOCK is
// refused, naming it, and the temporary file is made anew: the target is
// left as it was.
func TestDataDirSymlinkedFiles(t *testing.T) {
	for _, name := range []string{"LOCK", IdentityFile + ".tmp", DepthFile + ".tmp", ScopeFile + ".tmp"} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			victim := filepath.Join(tmp, "passwd")
			const content = "root:x:0:0:root:/root:/bin/bash\n"
			if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(tmp, "node")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
			if err == nil {
				err = n.Close()
			}
			t.Logf("open: %v", err)
			if b, _ := os.ReadFile(victim); string(b) != content {
				t.Errorf("the file %s linked to holds %q now", name, b)
			}
		})
	}
}

// TestTreeSharedByTwoDirs: two data directories whose urls/ is one
// directory (a symbolic link). DIR/LOCK guards each directory only; the
// URL tree's own lock (urltree.ErrLocked) refuses the second node.
func TestTreeSharedByTwoDirs(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	na, err := OpenNode(NodeConfig{Dir: a, Lookup: noLookup})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a, treeSubdir), filepath.Join(b, treeSubdir)); err != nil {
		t.Fatal(err)
	}
	nb, err := OpenNode(NodeConfig{Dir: b, Lookup: noLookup})
	if err == nil {
		nb.Close()
		t.Error("a second node opened the URL tree of a running one")
	} else if !strings.Contains(err.Error(), "in use") {
		t.Errorf("second node: %v, want the tree named in use", err)
	}
	if err := na.Close(); err != nil {
		t.Fatal(err)
	}
	// Once the first is closed, the tree opens again.
	nb, err = OpenNode(NodeConfig{Dir: b, Lookup: noLookup})
	if err != nil {
		t.Fatal(err)
	}
	nb.Close()
}

// TestSchedOfAnotherDir: DIR/sched replaced by another data directory's
// (copied from another node or crawl) was opened as this one's, its URL
// states taken for this tree's ids; now the node refuses it, naming the
// scheduler's meta file.
func TestSchedOfAnotherDir(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for _, dir := range []string{a, b} {
		n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(b, "sched")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(a, "sched"), filepath.Join(b, "sched")); err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(NodeConfig{Dir: b, Lookup: noLookup})
	if err == nil {
		n.Close()
	}
	if !errors.Is(err, scheduler.ErrForeign) || !strings.Contains(err.Error(), filepath.Join(b, "sched", "sched.meta")) {
		t.Fatalf("a node on another directory's sched/: %v, want scheduler.ErrForeign naming its sched.meta", err)
	}
}

// TestOldSchedOfAnotherDir: a sched/ from before the tree IDs (scheduler
// format 3) holds no ID to compare, and one copied from another data
// directory was given this tree's ID and read as its own. The node now
// gives the scheduler the tree's hosts (scheduler.Config.HostOf) to check
// a sample of its records against, and the copy is refused.
func TestOldSchedOfAnotherDir(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	for i, dir := range []string{a, b} {
		srv, lookup := startWeb(t, testweb.Config{Hosts: 4, Seed: int64(10 + i), MaxPages: 3, MinPages: 2, Seeds: 4, Plain: true}, &bytes.Buffer{})
		if _, err := runNode(t, context.Background(), nodeConfig(t, dir, srv, lookup, 1)); err != nil {
			t.Fatal(err)
		}
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
	if err := os.RemoveAll(filepath.Join(b, "sched")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(a, "sched"), filepath.Join(b, "sched")); err != nil {
		t.Fatal(err)
	}
	n, err := OpenNode(NodeConfig{Dir: b, Lookup: noLookup})
	if err == nil {
		n.Close()
	}
	if !errors.Is(err, scheduler.ErrForeign) || !strings.Contains(err.Error(), "before format version 3") {
		t.Fatalf("a node on another directory's sched/ from before format 3: %v, want scheduler.ErrForeign", err)
	}
}
