package spider

import (
	"context"
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
	n, err := OpenNode(nodeConfigFor(t, t.TempDir(), nil, noLookup, nil, 2))
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := putDurable(ctx, n, page); err != nil {
		t.Fatal(err)
	}
	n.stored[id] = storedOutcome(200)

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
// in the store all the same. A stored redirect ends redirected, not
// completed.
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
	base := fmt.Sprintf("http://a.test:%d", ln.Addr().(*net.TCPAddr).Port)
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
	// A page and a redirect, as a crash left them: stored, unfinished.
	pages := []struct {
		page *storage.Page
		want scheduler.State
	}{
		{&storage.Page{URL: base + "/p", Status: 200, Header: []byte("Content-Type: text/html\r\n"), Body: []byte("<p>stored</p>")}, scheduler.Completed},
		{&storage.Page{URL: base + "/r", Status: 301, Header: []byte("Location: /p\r\n")}, scheduler.Redirected},
	}
	for _, c := range pages {
		n.seeOne(c.page.URL, 0, map[uint32]pageLinks{})
		id, ok := n.tree.FindString(c.page.URL)
		if !ok {
			t.Fatalf("%s not admitted", c.page.URL)
		}
		c.page.URLID, c.page.FetchTime = uint64(id), time.Now()
		n.stored[id] = storedOutcome(c.page.Status) // as recover finds it
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range pages {
		if err := putDurable(ctx, n, c.page); err != nil {
			t.Fatal(err)
		}
	}
	sum, runErr := n.Run(ctx)
	var got []scheduler.State
	for _, c := range pages {
		got = append(got, n.sched.URL(uint32(c.page.URLID)).State)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, runErr)
	}
	for i, c := range pages {
		if got[i] != c.want {
			t.Errorf("%s (status %d), stored before the crash, ended %v, want %v", c.page.URL, c.page.Status, got[i], c.want)
		}
	}
}

// putDurable stores pages as a crawl before a crash would have, and waits
// until the store has made them durable: its OnDurable (Node.durable)
// pokes n.idle, which nothing else reads while the node is not running.
// The store counts a sync's pages in Durable only after its OnDurable
// returned, so the poke can come before the count: the loop looks again
// every few milliseconds too (waiting on the poke alone it could miss
// the count and hang: TestReexpandStoredBeforeCrash timed out once in
// a -race run of the package).
func putDurable(ctx context.Context, n *Node, pages ...*storage.Page) error {
	want := n.store.Durable() + uint64(len(pages))
	for _, p := range pages {
		if err := n.store.Put(ctx, p); err != nil {
			return err
		}
	}
	n.store.SyncWhenIdle(true)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for n.store.Durable() < want {
		select {
		case <-n.idle:
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d pages stored, %d durable: %w", len(pages), n.store.Durable(), ctx.Err())
		}
	}
	return nil
}
