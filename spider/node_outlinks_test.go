package spider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
)

// A page found at a shorter depth once it is durable, its links dropped
// from the writer's memory (pruneOutlinks), is re-expanded from the store.
// Depth limit 2: a.test/ links /a and b.test/r; /a links /p (depth 2);
// /p links /c (depth 3: too deep). b.test/r answers only once /p is
// durable and the writer has synced since (so /p's links are pruned), with
// a redirect to /p, which keeps its depth 1: /p is lowered to 1, its links
// are read back from the store, and /c (depth 2 now) is fetched.
func TestNodeReexpandsDurablePage(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	a := fmt.Sprintf("http://a.test:%d", port)
	nodes := make(chan *Node, 1)
	page := func(w http.ResponseWriter, links ...string) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for _, l := range links {
			fmt.Fprintf(w, `<a href="%s">x</a>`, l)
		}
		fmt.Fprint(w, "</body></html>")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case host == "b.test" && r.URL.Path == "/r":
			n := <-nodes
			nodes <- n
			if !waitDurableAndSynced(r.Context(), n, a+"/p") {
				http.Error(w, "gave up", http.StatusInternalServerError)
				return
			}
			http.Redirect(w, r, a+"/p", http.StatusMovedPermanently)
		case host != "a.test":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			page(w, "/a", fmt.Sprintf("http://b.test:%d/r", port))
		case r.URL.Path == "/a":
			page(w, "/p")
		case r.URL.Path == "/p":
			page(w, "/c")
		case r.URL.Path == "/c":
			page(w)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	cfg := nodeConfigFor(t, dir, []string{a + "/"}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 2)
	cfg.Collector = collector.Config{Fetchers: 4, ReconnectGap: 10 * time.Millisecond, ResponseTimeout: 20 * time.Second}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond, MaxCrawlDelay: time.Second,
		ErrorDelay: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 1}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes <- n
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, runErr := n.Run(ctx)
	fromStore := n.reader != nil // storedLinks opened it
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, runErr)
	}
	got := storedURLs(t, dir)
	for _, p := range []string{"/", "/a", "/p", "/c"} {
		if !got[a+p] {
			t.Errorf("%s not stored; stored %v", p, got)
		}
	}
	if !fromStore {
		t.Error("the re-expansion did not read the page back from the store")
	}
}

// waitDurableAndSynced waits until url's page is durable (its URL
// completed) and the writer has then pruned its outlinks: two passes of
// pruneOutlinks ended since (the writer prunes after each sync, which runs
// on a goroutine of its own, so one ending may have begun before); false if
// ctx ends first.
func waitDurableAndSynced(ctx context.Context, n *Node, url string) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if id, ok := n.tree.FindString(url); ok && n.sched.URL(id).State == scheduler.Completed {
			break
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	start := n.prunes.Load()
	for n.prunes.Load() < start+2 {
		select {
		case n.syncReq <- struct{}{}:
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
