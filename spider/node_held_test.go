package spider

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// Pages whose records pass heldSyncBytes in one list (40 incompressible
// pages of 64 KiB behind one index, lists of 20) are all stored once, and
// the bytes counted as waiting for their links' sync go back to zero.
func TestNodeHeldBytes(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const pages, size = 40, 64 << 10
	body := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range body {
		body[i] = 'a' + byte(rng.IntN(26)) // little for LZO to find
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			for i := range pages {
				fmt.Fprintf(w, `<a href="/p%d">p</a>`, i)
			}
		default:
			w.Write(body)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	seed := fmt.Sprintf("http://h.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, t.TempDir(), []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 1)
	cfg.SyncInterval = time.Hour // only the held bytes, a waiting page and idleness ask for syncs
	cfg.Scheduler.MinDelay = time.Millisecond
	cfg.Collector.ReconnectGap = time.Millisecond
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sum, runErr := n.Run(ctx)
	held := n.held.Load()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if !sum.Finished || sum.Stored != pages+1 {
		t.Errorf("stored %d pages (finished %v), want %d", sum.Stored, sum.Finished, pages+1)
	}
	if held != 0 {
		t.Errorf("%d bytes still counted as waiting for a sync after the crawl", held)
	}
	if got := storedURLs(t, cfg.Dir); len(got) != pages+1 {
		t.Errorf("store holds %d URLs, want %d", len(got), pages+1)
	}
}
