package spider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
)

// flakyRobotsSite serves robots.txt once (disallowing /private/), then
// answers 503 to every robots.txt request; "/" links to /a, /b and
// /private/x. It counts requests by path.
type flakyRobotsSite struct {
	mu   sync.Mutex
	hits map[string]int
}

func (s *flakyRobotsSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	n := s.hits[r.URL.Path]
	s.mu.Unlock()
	switch r.URL.Path {
	case "/robots.txt":
		if n > 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	case "/":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/a">a</a> <a href="/b">b</a> <a href="/private/x">x</a>`)
	case "/a", "/b", "/private/x":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>leaf</p>")
	default:
		http.NotFound(w, r)
	}
}

// crawlFlakyRobots crawls a flakyRobotsSite on loopback with lists of one
// URL and a robots.txt that expires at once, so that every list asks for
// robots.txt again and meets the 503.
func crawlFlakyRobots(t *testing.T, staleFor time.Duration) (map[string]bool, map[string]int) {
	t.Helper()
	site := &flakyRobotsSite{hits: map[string]int{}}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: site}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	seed := fmt.Sprintf("http://flaky.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, dir, []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 2)
	cfg.Scheduler = scheduler.Config{ListLen: 1, PartialWait: time.Millisecond, ErrorDelay: 10 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond}
	cfg.RobotsTTL, cfg.RobotsStaleFor = time.Nanosecond, staleFor
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := runNode(t, ctx, cfg)
	if err != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, err)
	}
	got := map[string]bool{}
	for u := range storedURLs(t, dir) {
		got[strings.TrimPrefix(u, strings.TrimSuffix(seed, "/"))] = true
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	return got, site.hits
}

// TestNodeRobotsStaleCopy: robots.txt fetched once, then unreachable
// (503). Within politeness.robots_stale_for the node keeps using the copy
// it has (still obeying its Disallow); with the stale copy off, nothing
// more is fetched once robots.txt is unreachable.
func TestNodeRobotsStaleCopy(t *testing.T) {
	got, hits := crawlFlakyRobots(t, time.Hour)
	if len(got) != 3 || !got["/"] || !got["/a"] || !got["/b"] || hits["/private/x"] != 0 || hits["/robots.txt"] < 2 {
		t.Errorf("with a stale copy: stored %v, requests %v; want /, /a, /b, robots.txt asked again, /private/x never", got, hits)
	}
	got, hits = crawlFlakyRobots(t, -1)
	if len(got) != 1 || !got["/"] || hits["/a"]+hits["/b"]+hits["/private/x"] != 0 {
		t.Errorf("without a stale copy: stored %v, requests %v; want / only", got, hits)
	}
}
