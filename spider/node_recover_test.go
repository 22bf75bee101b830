package spider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/urltree"
)

// After a crash a page found in the store under an unfinished URL's id
// counts as stored only if it is that URL's.
func TestStoredAs(t *testing.T) {
	tree, err := urltree.Open(filepath.Join(t.TempDir(), "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	id, _, err := tree.AddString("http://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	n := &Node{tree: tree, cfg: NodeConfig{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}}
	if !n.storedAs(id, "http://a.example/") || len(logs) != 0 {
		t.Errorf("its own page: not taken, logs %q", logs)
	}
	if n.storedAs(id, "http://b.example/") || len(logs) != 1 || !strings.Contains(logs[0], `the page store holds "http://b.example/" under URL id 0`) {
		t.Errorf("another URL's page: taken, or logs %q", logs)
	}
}

const earlyCrashChildEnv = "KSPIDER_EARLY_CRASH_CHILD"

// TestEarlyCrashChild is TestOpenAfterCrashBeforeFirstSync's node: it
// adds a URL to the tree and the scheduler, never syncs, says so and
// waits to be killed.
func TestEarlyCrashChild(t *testing.T) {
	dir := os.Getenv(earlyCrashChildEnv)
	if dir == "" {
		t.Skip("only run as TestOpenAfterCrashBeforeFirstSync's child process")
	}
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		childFail(err)
	}
	n.seeOne("http://a.test/", 0, map[uint32]pageLinks{})
	fmt.Println("added")
	select {}
}

func noLookup(context.Context, string) ([]netip.Addr, error) {
	return nil, errors.New("no network here")
}

// TestOpenAfterCrashBeforeFirstSync: a kill -9 before the writer's first
// sync leaves the URL tree with no id and the scheduler with the records
// it wrote in place (mapped writes survive a killed process). OpenNode
// refused the directory for good ("the scheduler knows 1 URL ids, the URL
// tree only 0"), as the scheduler took a URLLimit of 0 for none; the
// soak's kills within the first 30 ms showed it. Now the records are
// dropped and the URL is added again.
func TestOpenAfterCrashBeforeFirstSync(t *testing.T) {
	if os.Getenv(earlyCrashChildEnv) != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	killChildAfter(t, "TestEarlyCrashChild", earlyCrashChildEnv+"="+dir, "added")
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		t.Fatalf("open after a crash before the first sync: %v", err)
	}
	defer n.Close()
	if o := n.sched.Opened(); o.Clean || n.sched.Len() != 0 || n.tree.Len() != 0 {
		t.Fatalf("after the crash: tree %d ids, scheduler %d, %+v", n.tree.Len(), n.sched.Len(), o)
	}
	n.seeOne("http://a.test/", 0, map[uint32]pageLinks{})
	if id, ok := n.tree.FindString("http://a.test/"); !ok || n.sched.URL(id).State != scheduler.InList {
		t.Errorf("the seed, added again: id %d in the tree %v, %+v", id, ok, n.sched.URL(id))
	}
}

// killChildAfter runs test run of this binary as a child process with env
// added, kills it with kill -9 once it has printed its first line, which
// must be want: the child says it reached the state to crash in.
func killChildAfter(t *testing.T, run, env, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != want+"\n" {
		t.Fatalf("child %s: %q, want %q\n%s", run, line, want, stderr.Bytes())
	}
}
