package spider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
)

const storedUnreportedChildEnv = "KSPIDER_STORED_UNREPORTED_CHILD"

// TestStoredUnreportedChild is TestStoredUnreportedKeptUnclean's node.
func TestStoredUnreportedChild(t *testing.T) {
	dir := os.Getenv(storedUnreportedChildEnv)
	if dir == "" {
		t.Skip("only run as TestStoredUnreportedKeptUnclean's child process")
	}
	crashWithUnreportedPage(t, dir, "http://a.test/")
}

// crashWithUnreportedPage is a crash test's child node in dir: it adds
// urls, syncs them, stores the first's page durably without reporting it
// (a kill -9 between the store's sync and the scheduler's), says "stored"
// and waits to be killed.
func crashWithUnreportedPage(t *testing.T, dir string, urls ...string) {
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		childFail(err)
	}
	for _, u := range urls {
		n.seeOne(u, 0, map[uint32]pageLinks{})
	}
	id, ok := n.tree.FindString(urls[0])
	if !ok {
		childFail(fmt.Errorf("%s is not in the tree", urls[0]))
	}
	if err := errors.Join(n.tree.Sync(), n.sched.Sync()); err != nil {
		childFail(err)
	}
	p := &storage.Page{URLID: uint64(id), URL: urls[0], FetchTime: time.Now(), Status: 200, Body: []byte("<p>a")}
	if err := n.store.Put(context.Background(), p); err != nil {
		childFail(err)
	}
	for n.store.Durable() == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("stored")
	select {}
}

// A page a crash left stored but unreported is known only to the run that
// found it (recover), until its list comes up and reports it. That run
// closed the scheduler clean all the same when it ended first (drained,
// stopped, or refused after the scheduler opened), so the next start
// looked in the store for nothing and fetched and stored the page again:
// the soak's "1 records superseded", after a run that resumed from a
// kill -9 and was drained. Now such a close keeps the scheduler unclean
// until every such page is reported.
func TestStoredUnreportedKeptUnclean(t *testing.T) {
	if os.Getenv(storedUnreportedChildEnv) != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	killChildAfter(t, "TestStoredUnreportedChild", storedUnreportedChildEnv+"="+dir, "stored")
	cfg := nodeConfigFor(t, dir, nil, noLookup, nil, 2)
	open := func(what string) *Node {
		t.Helper()
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	wantStored := func(n *Node, what string) {
		t.Helper()
		if len(n.stored) != 1 {
			t.Fatalf("%s: %d pages stored but unreported, want the one (scheduler %+v)", what, len(n.stored), n.sched.Opened())
		}
	}

	n := open("after the kill")
	wantStored(n, "after the kill")
	if err := n.Close(); err != nil { // ended before the page's list came up
		t.Fatal(err)
	}

	// A start refused after the scheduler opened: the store's directory
	// held by another process.
	held, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(dir, "pages")}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := OpenNode(cfg); err == nil {
		n.Close()
		held.Close()
		t.Fatal("a start with the store held by another: not refused")
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}

	n = open("after a close and a refused start")
	wantStored(n, "after a close and a refused start")
	sum, err := n.Run(context.Background())
	if err != nil || !sum.Finished || sum.Fetched != 0 {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	id, _ := n.tree.FindString("http://a.test/")
	if st := n.sched.URL(id).State; st != scheduler.Completed {
		t.Fatalf("the stored page's URL after the run: %v", st)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = open("after the run")
	defer n.Close()
	if o := n.sched.Opened(); !o.Clean || len(n.stored) != 0 {
		t.Fatalf("after the run reported the page: %+v, %d stored but unreported", o, len(n.stored))
	}
}
