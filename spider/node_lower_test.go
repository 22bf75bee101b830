package spider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
)

const lowerCrashChildEnv = "KSPIDER_LOWER_CRASH_CHILD"

const lowerP, lowerC = "http://a.test/p", "http://a.test/c"

// TestLowerCrashChild is TestLowerFetchedCrash's node: /p fetched and
// stored at depth 2 (the limit), its link /c too deep; then /p is seen at
// depth 1, which re-expands it and adds /c, and the child waits to be
// killed before any sync. Mode "completed": /p is durable and reported;
// "stored": its links are in the writer's memory and it is stored, not
// reported yet (a crash leaves it stored: recover's n.stored).
func TestLowerCrashChild(t *testing.T) {
	dir, mode, _ := strings.Cut(os.Getenv(lowerCrashChildEnv), ";")
	if dir == "" {
		t.Skip("only run as TestLowerFetchedCrash's child process")
	}
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		childFail(err)
	}
	out := map[uint32]pageLinks{}
	n.seeOne(lowerP, 2, out)
	id, ok := n.tree.FindString(lowerP)
	if !ok {
		childFail(fmt.Errorf("%s not admitted", lowerP))
	}
	syncHere(n, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := n.sched.Next(ctx)
	if err != nil || len(l.IDs) != 1 || l.IDs[0] != id {
		childFail(fmt.Errorf("list %+v, %v", l, err))
	}
	page := &storage.Page{URLID: uint64(id), URL: lowerP, FetchTime: time.Now(), Status: 200,
		Header: []byte("Content-Type: text/html\r\n"), Body: []byte(`<a href="/c">c</a>`)}
	if err := putDurable(ctx, n, page); err != nil {
		childFail(err)
	}
	if err := n.sched.Release(l.Host); err != nil {
		childFail(err)
	}
	if mode == "stored" {
		out[id] = pageLinks{parent: id, depth: 2, links: []string{lowerC}} // as the writer keeps them
	} else {
		n.report(id, scheduler.Outcome{Kind: scheduler.Fetched, Status: 200})
		if err := n.firstErr(); err != nil || n.sched.URL(id).State != scheduler.Completed {
			childFail(fmt.Errorf("%s not completed: %+v, %v", lowerP, n.sched.URL(id), err))
		}
	}
	syncHere(n, nil)
	n.seeOne(lowerP, 1, out) // /c is at depth 2 now: admitted, not synced
	if _, ok := n.tree.FindString(lowerC); !ok {
		childFail(fmt.Errorf("%s not admitted by the re-expansion", lowerC))
	}
	fmt.Println("reexpanded")
	select {}
}

// TestLowerFetchedCrash: a fetched page found shallower is re-expanded,
// and the URLs that adds are in the tree's unsynced tail. Its new depth
// went to the scheduler at once, in place, which a kill -9 keeps while
// the tree loses its tail: after the restart the page had its new depth,
// so no sighting lowered and re-expanded it again, and /c, within the
// limit only from the new depth, was never crawled (the crash soak's
// missing pages one level past a host's lowered root). Now the new depth
// waits for the sync that makes the re-expansion durable (node_lower.go):
// after the crash /p keeps depth 2, and seen at 1 again it adds /c.
// The same for a page stored while its links were in the writer's memory
// (the soak's second case): it is not fetched again after the crash.
func TestLowerFetchedCrash(t *testing.T) {
	if os.Getenv(lowerCrashChildEnv) != "" {
		t.Skip("child")
	}
	for _, mode := range []string{"completed", "stored"} {
		t.Run(mode, func(t *testing.T) { lowerCrash(t, mode) })
	}
}

func lowerCrash(t *testing.T, mode string) {
	dir := t.TempDir()
	killChildAfter(t, "TestLowerCrashChild", lowerCrashChildEnv+"="+dir+";"+mode, "reexpanded")
	n, err := OpenNode(nodeConfigFor(t, dir, nil, noLookup, nil, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	id, ok := n.tree.FindString(lowerP)
	if !ok {
		t.Fatalf("%s lost", lowerP)
	}
	if mode == "stored" && !n.wasStored(id) {
		t.Fatalf("%s not found stored after the crash", lowerP)
	}
	_, cKept := n.tree.FindString(lowerC)
	if d, _ := n.sched.Depth(id); d == 1 && !cKept {
		t.Errorf("after the crash %s has depth 1, but %s, which its re-expansion added, is lost", lowerP, lowerC)
	}
	n.seeOne(lowerP, 1, map[uint32]pageLinks{}) // the page that linked /p at depth 0, fetched again
	if cid, ok := n.tree.FindString(lowerC); !ok {
		t.Errorf("%s, seen again at depth 1, did not admit %s", lowerP, lowerC)
	} else if d, _ := n.dstore.depthOf(cid); d != 2 {
		t.Errorf("%s at depth %d, want 2", lowerC, d)
	}
}
