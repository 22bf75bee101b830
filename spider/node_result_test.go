package spider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// streamWeb serves a host on loopback: robots.txt 404, an index linking
// pages /p0../p{pages-1}, each size bytes of HTML little compressible
// with no links. before, when set, runs before a page is answered. It
// returns the seeds: the index and every page, so that the host's first
// list (robots.txt on its connection, node_robots_list.go) is a full one
// and so are the lists after it.
func streamWeb(t *testing.T, pages, size int, before func(path string)) []string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, size)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range body {
		body[i] = 'a' + byte(rng.IntN(26))
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
			if before != nil {
				before(r.URL.Path)
			}
			w.Write(body)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := fmt.Sprintf("http://h.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	seeds := []string{base}
	for i := range pages {
		seeds = append(seeds, fmt.Sprintf("%sp%d", base, i))
	}
	return seeds
}

// crawlStream crawls cfg's web to the end and checks that pages pages were
// stored, each once; it returns the collector pool's lent bytes after the
// crawl and the most it lent at once, and the bytes still counted held.
func crawlStream(t *testing.T, cfg NodeConfig, pages int) (lent, most, held int64) {
	t.Helper()
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sum, runErr := n.Run(ctx)
	lent, most = n.coll.PoolLent()
	held = n.held.Load()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if !sum.Finished || sum.Stored != uint64(pages) {
		t.Errorf("stored %d pages (finished %v), want %d", sum.Stored, sum.Finished, pages)
	}
	if got := storedURLs(t, cfg.Dir); len(got) != pages {
		t.Errorf("store holds %d URLs, want %d", len(got), pages)
	}
	return lent, most, held
}

func streamConfig(t *testing.T, seeds []string) NodeConfig {
	cfg := nodeConfigFor(t, t.TempDir(), seeds, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 1)
	cfg.Scheduler.MinDelay = time.Millisecond
	cfg.Collector.ReconnectGap = time.Millisecond
	cfg.Collector.Pipeline = 8
	return cfg
}

// TestNodeStreamsPages: a list's pages give their collector buffers back
// as they arrive (node_result.go), not when the list is done. 60 pages
// of 60 KB in lists of 20 on one host (one list out at a time): the most
// the collector's pool ever lent is what the response being read, the
// pages waiting for the encoder (encodeQueue) and the one it encodes
// need, far below a list's 20 bodies (1.2 MB and more, 1.75 MB measured),
// which it held before.
func TestNodeStreamsPages(t *testing.T) {
	const pages, size = 60, 60_000
	lent, most, held := crawlStream(t, streamConfig(t, streamWeb(t, pages, size, nil)), pages+1)
	// Each page: a 64 KiB body buffer and its head; the one being read
	// may be growing into 128 KiB.
	const bound = (encodeQueue+3)*(64<<10+1<<10) + 128<<10
	t.Logf("pool: most lent %d bytes (bound %d; a list's bodies: %d)", most, bound, 20*size)
	if most > bound {
		t.Errorf("the collector's pool lent up to %d bytes at once, want <= %d: results are held past their processing", most, bound)
	}
	if lent != 0 || held != 0 {
		t.Errorf("after the crawl: %d bytes still lent by the pool, %d counted held", lent, held)
	}
}

// TestNodeResultAfterCancel: the crawl's context is cancelled while a
// list is being fetched (the server cancels it before answering a page),
// so that page's result and the rest of the list reach Each after the
// list's context is done: on the first list of the host (robots.txt on its
// connection, whose batch is then dropped) and on a later one. Every
// buffer goes back, nothing stays counted as held, and a second run stores
// every page exactly once.
func TestNodeResultAfterCancel(t *testing.T) {
	for _, at := range []string{"/p5", "/p30"} {
		t.Run(at[1:], func(t *testing.T) {
			const pages, size = 40, 20_000
			var mu sync.Mutex
			var stop context.CancelFunc
			hits := 0
			seeds := streamWeb(t, pages, size, func(path string) {
				mu.Lock()
				defer mu.Unlock()
				if path == at && stop != nil {
					hits++
					stop()
					stop = nil
				}
			})
			cfg := streamConfig(t, seeds)
			n, err := OpenNode(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ctx1, cancel1 := context.WithCancel(ctx)
			mu.Lock()
			stop = cancel1
			mu.Unlock()
			sum1, err1 := n.Run(ctx1)
			cancel1()
			lent, _ := n.coll.PoolLent()
			held := n.held.Load()
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err1, ErrInterrupted) {
				t.Fatalf("first run: %v (%+v), want ErrInterrupted", err1, sum1)
			}
			mu.Lock()
			if hits != 1 {
				t.Errorf("%s asked %d times before the cancel", at, hits)
			}
			mu.Unlock()
			if lent != 0 || held != 0 {
				t.Errorf("after the cancelled run: %d bytes still lent by the pool, %d counted held", lent, held)
			}
			sum2, err := runNode(t, ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stored %d, then %d", sum1.Stored, sum2.Stored)
			if !sum2.Finished || sum1.Stored+sum2.Stored != pages+1 {
				t.Errorf("stored %d + %d pages (finished %v), want %d", sum1.Stored, sum2.Stored, sum2.Finished, pages+1)
			}
			if got := storedURLs(t, cfg.Dir); len(got) != pages+1 { // (and none twice)
				t.Errorf("store holds %d URLs, want %d", len(got), pages+1)
			}
		})
	}
}
