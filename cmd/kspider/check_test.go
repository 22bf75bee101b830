package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats/storetest"
	"github.com/kspider/kspider/urltree"
)

func TestCheckFindsAndRepairsDamage(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	code, out, errOut := runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 0 || !strings.Contains(out, "pages: "+dirs[0]+": ok: 12 pages") {
		t.Fatalf("clean store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	code, out, errOut = runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 1 || !strings.Contains(out, "pages: damage: storage: "+filepath.Join(dirs[0], "00000001.seg")+" at offset") ||
		!strings.Contains(errOut, "1 problems found") {
		t.Fatalf("damaged store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", append([]string{"check", "--repair"}, args...)...)
	if code != 1 || !strings.Contains(out, "rewritten with its 11 intact records") || !strings.Contains(out, "repaired: 11 intact pages") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "damaged", "00000001.seg")); err != nil {
		t.Fatalf("the damaged segment was not kept: %v", err)
	}
	code, out, errOut = runCmd(t, "", append([]string{"check"}, args...)...)
	if code != 0 || !strings.Contains(out, "ok: 11 pages") {
		t.Fatalf("after the repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "", append([]string{"stats"}, args...)...)
	if code != 0 {
		t.Fatalf("stats after the repair: exit %d, %q", code, errOut)
	}
}

func TestCheckUsage(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check"}, 2, "--data DIR is required"},
		{[]string{"check", "--data", empty, "x"}, 2, "unexpected argument"},
		{[]string{"check", "--data", filepath.Join(empty, "missing")}, 1, "missing"},
		{[]string{"check", "--data", empty}, 1, "holds no kspider data"},
	} {
		code, _, errOut := runCmd(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// TestCheckNodeDirectory checks a node's data directory, with the URL tree
// in urls/ beside the pages in pages/: a damaged tree is found, repaired
// with every other URL kept, and checks clean afterwards.
func TestCheckNodeDirectory(t *testing.T) {
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if _, _, err := tr.AddString(fmt.Sprintf("http://host%d.example.org/page/%d.html", i%37, i)); err != nil {
			t.Fatal(err)
		}
	}
	tree := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	// The pages stored by this tree's node: the store takes its ID.
	s, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(node, "pages")}, Codec: "none", TreeID: tree})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range storetest.Pages() {
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	if code != 0 || !strings.Contains(out, "urls: "+filepath.Join(node, "urls")+": ok: 2000 URLs") || !strings.Contains(out, "ok: 12 pages") {
		t.Fatalf("clean node directory: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	arena := filepath.Join(node, "urls", "urltree.arena")
	b, err := os.ReadFile(arena)
	if err != nil {
		t.Fatal(err)
	}
	b[10000] ^= 0x40 // inside the committed entries (about 22 KB of them)
	if err := os.WriteFile(arena, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(t, "", "check", "--data", node)
	if code != 1 || !strings.Contains(out, "urls: damage: "+arena) || !strings.Contains(errOut, "problems found") {
		t.Fatalf("damaged tree: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(out, "urls: "+filepath.Join(node, "urls")+": repaired: 2000 URLs") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--data", node)
	if code != 0 || !strings.Contains(out, "ok: 2000 URLs") {
		t.Fatalf("after the repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// check --repair on the directory of a running node is refused before
// anything is touched (the node's lock is held here as a crawl holds it).
// Before, only the page store and the scheduler had locks of their own:
// the URL tree, which has none, was rebuilt under the running node.
func TestCheckRepairRefusesARunningNode(t *testing.T) {
	dirs, _ := buildTestStore(t, 1, "none")
	node := filepath.Dir(dirs[0])
	pages := filepath.Join(node, "pages")
	if err := os.Rename(dirs[0], pages); err != nil {
		t.Fatal(err)
	}
	storetest.Corrupt(t, []string{pages}, "http://www.mit.edu/report.pdf")
	lock, err := spider.LockDir(node)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(errOut, "not repairing") || !strings.Contains(errOut, "in use") {
		t.Fatalf("repair beside a running node: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(pages, "damaged")); err == nil {
		t.Fatal("the store was repaired under the running node")
	}
	lock.Release()
	code, out, errOut = runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(out, "repaired: 11 intact pages") {
		t.Fatalf("repair of the stopped node: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckPartGivenToo: a node's data directory given with --data and
// one of its parts given too (its urls/, sched/ or comm/, by any path) had
// that part checked twice, its problems counted twice; given first, the
// scheduler was checked with no URL tree to hold it to and then skipped.
// Now a part of a node given too is checked once, with the node's, in
// either order.
func TestCheckPartGivenToo(t *testing.T) {
	node, _ := buildTreeSched(t)
	path := filepath.Join(node, "sched", "sched.states")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[64+8*2+1] ^= 0x20 // one damaged record
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sched, urls := filepath.Join(node, "sched"), filepath.Join(node, "urls")
	for _, args := range [][]string{
		{"--data", node, "--data", sched, "--data", urls},
		{"--data", sched + "/.", "--data", urls, "--data", node},
		{"--data", urls, "--data", node + "/../" + filepath.Base(node) + "/sched", "--data", node},
	} {
		code, out, errOut := runCmd(t, "", append([]string{"check"}, args...)...)
		if code != 1 || !strings.Contains(errOut, "1 problems found") || strings.Count(out, "damage: "+path) != 1 ||
			strings.Count(out, "urls: "+urls+": ok") != 1 || strings.Contains(out, "not compared") {
			t.Fatalf("check %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// TestCheckNodeWithoutTree: a node's data directory whose urls/ is gone
// (moved away, a link to a disk not mounted, copied in part) beside its
// sched/ was said ok, exit 0, though the scheduler's records are by the
// lost tree's URL ids and the node refuses to start on it. Now that is a
// problem naming the directory, exit 1; a scheduler given alone, or a
// node's directory with its tree, is still ok. The scheduler's ok line
// no longer tells the operator to check the directory given.
func TestCheckNodeWithoutTree(t *testing.T) {
	node, _ := buildTreeSched(t)
	if code, out, errOut := runCmd(t, "", "check", "--data", node); code != 0 {
		t.Fatalf("with its tree: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := os.Rename(filepath.Join(node, "urls"), filepath.Join(t.TempDir(), "urls")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	if code != 1 || !strings.Contains(out, "urls: "+node+": no URL tree (in "+filepath.Join(node, "urls")+"), but the directory holds a crawl's sched") ||
		!strings.Contains(errOut, "1 problems found") || strings.Contains(out, "checks the data directory's two together") {
		t.Fatalf("without its tree: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "", "check", "--data", filepath.Join(node, "sched")); code != 0 {
		t.Fatalf("its scheduler alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckGoesOn: a part that could not be checked at all (sched.meta
// made a FIFO) ended the check with an error, exit 1, and the directory's
// other files went unchecked, a damaged DEPTH unreported until the first
// was mended. Now it is a problem naming the file and the check goes on
// to the rest; with --repair, the parts after it are checked, not
// repaired.
func TestCheckGoesOn(t *testing.T) {
	node, _ := buildTreeSched(t)
	meta := filepath.Join(node, "sched", "sched.meta")
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(meta, 0o644); err != nil {
		t.Fatal(err)
	}
	depth := filepath.Join(node, "DEPTH")
	if err := os.WriteFile(depth, []byte("kspider depth limit 1\nmax_depth 3\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "--data", node}, {"check", "--repair", "--data", node}} {
		code, out, errOut := runCmd(t, "", args...)
		if code != 1 || !strings.Contains(out, "sched: "+node+": cannot check: ") || !strings.Contains(out, meta) ||
			!strings.Contains(out, "depth: spider: "+depth+" is ") || !strings.Contains(errOut, "2 problems found") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		if args[1] == "--repair" && !strings.Contains(out, "the parts below are checked, not repaired") {
			t.Fatalf("%v: stdout %q", args, out)
		}
		// It said '2 problems found and repaired', neither one touched.
		if want := "2 problems found in " + node + ", 0 repaired, 2 not repaired (said above): " + node + " sched: 1 (could not be checked), " + node + " depth: 1 (check cannot repair it)"; args[1] == "--repair" && !strings.Contains(errOut, want) {
			t.Fatalf("%v: stderr %q, want %q", args, errOut, want)
		}
	}
}

// TestCheckEveryDataDir: one --data that cannot be checked (a disk not
// mounted, so its directory is missing) ended the run, and the
// directories given after it were never checked. Now each is said and the
// others are checked, exit 1.
func TestCheckEveryDataDir(t *testing.T) {
	node, _ := buildTreeSched(t)
	missing := filepath.Join(t.TempDir(), "disk2", "node")
	code, out, errOut := runCmd(t, "", "check", "--data", missing, "--data", node)
	if code != 1 || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "not checked (said above): "+missing) ||
		!strings.Contains(out, "urls: "+filepath.Join(node, "urls")+": ok") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// check (no --repair) of a running node's directory said "ok" for each
// part and "lock: ok: a file of its own", no word that a node was writing
// it as it read: its findings at a file's end may be writes in progress.
// Now it says the directory is in use, by which pid, without taking the
// lock (a node starting then would refuse its directory) or writing.
func TestCheckSaysANodeRunsThere(t *testing.T) {
	dirs, _ := buildTestStore(t, 1, "none")
	node := filepath.Dir(dirs[0])
	if err := os.Rename(dirs[0], filepath.Join(node, "pages")); err != nil {
		t.Fatal(err)
	}
	code0, out, errOut := runCmd(t, "", "check", "--data", node) // (no urls/ here: a problem)
	if strings.Contains(out, "in use") {
		t.Fatalf("a stopped node: exit %d, stdout %q, stderr %q", code0, out, errOut)
	}
	lock, err := spider.LockDir(node)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	before, err := os.ReadFile(lock.Path())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	want := fmt.Sprintf("lock: %s: in use by a running node (pid %d)", node, os.Getpid())
	if code != code0 || !strings.Contains(out, want) {
		t.Fatalf("a running node: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if after, err := os.ReadFile(lock.Path()); err != nil || string(after) != string(before) {
		t.Errorf("the running node's LOCK after the check: %q, %v; was %q", after, err, before)
	}
}
