package spider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/scheduler"
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
