package spider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
)

// TestReexpandStoredBeforeCrash: a page that a crash left stored while its
// URL was unfinished (recover's n.stored) is not fetched again: its list
// reports it done as it is. Found at a shorter depth before that list goes
// out, its links must be read back from the store then, or never: reexpand
// took them for links on their way from a fetch and returned, so a link
// beyond the depth limit from the old depth and within it from the new
// one was never crawled.
func TestReexpandStoredBeforeCrash(t *testing.T) {
	lookup := func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no network here") }
	n, err := OpenNode(nodeConfigFor(t, t.TempDir(), nil, lookup, nil, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	out := map[uint32]pageLinks{}
	const p, c = "http://a.test/p", "http://a.test/c"
	n.seeOne(p, 2, out) // /p at the limit: its link /c (3) is too deep
	id, ok := n.tree.FindString(p)
	if !ok {
		t.Fatal("/p not admitted")
	}
	// /p as a crash left it: stored (durable), its URL still unfinished.
	page := &storage.Page{URLID: uint64(id), URL: p, FetchTime: time.Now(), Status: 200,
		Header: []byte("Content-Type: text/html\r\n"), Body: []byte(`<a href="/c">c</a>`)}
	if err := n.store.Put(context.Background(), page); err != nil {
		t.Fatal(err)
	}
	n.store.SyncWhenIdle(true)
	for deadline := time.Now().Add(time.Minute); n.store.Durable() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page never became durable")
		}
	}
	n.stored[id] = true

	n.seeOne(p, 1, out) // found at depth 1: /c is at depth 2 now
	if _, ok := n.tree.FindString(c); !ok {
		t.Errorf("%s, linked from %s stored before a crash and lowered to depth 1, was not admitted", c, p)
	}
	if d, ok := n.dstore.depthOf(id); !ok || d != 1 {
		t.Errorf("/p's depth %d, %v; want 1", d, ok)
	}
	syncHere(n, nil) // /p's new depth goes to the scheduler after /c is durable (node_lower.go)
	if d, ok := n.sched.Depth(id); !ok || d != 1 {
		t.Errorf("/p's depth in the scheduler after the sync %d, %v; want 1", d, ok)
	}
}

// TestStoredBeforeCrashRobotsDown: a page a crash left stored while its URL
// was unfinished is done whatever its host's robots.txt says now: with the
// robots.txt unreachable its list was reported a temporary failure whole,
// and the stored page's URL ended Failed, counted as an error, its page
// in the store all the same.
func TestStoredBeforeCrashRobotsDown(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable) // robots.txt too
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p := fmt.Sprintf("http://a.test:%d/p", ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	cfg := nodeConfigFor(t, dir, nil, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 2)
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond, MaxCrawlDelay: time.Second,
		ErrorDelay: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 1}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.seeOne(p, 0, map[uint32]pageLinks{})
	id, ok := n.tree.FindString(p)
	if !ok {
		t.Fatal("/p not admitted")
	}
	page := &storage.Page{URLID: uint64(id), URL: p, FetchTime: time.Now(), Status: 200,
		Header: []byte("Content-Type: text/html\r\n"), Body: []byte("<p>stored before the crash</p>")}
	if err := n.store.Put(context.Background(), page); err != nil {
		t.Fatal(err)
	}
	n.store.SyncWhenIdle(true)
	for deadline := time.Now().Add(time.Minute); n.store.Durable() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page never became durable")
		}
	}
	n.stored[id] = true // as recover finds it
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, runErr := n.Run(ctx)
	st := n.sched.URL(id).State
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, runErr)
	}
	if st != scheduler.Completed {
		t.Errorf("the stored page's URL ended %v, want completed", st)
	}
}
