package spider

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
)

// robotsListSite serves "/" linking to /a, /b and /private/x, its
// robots.txt by a handler the test gives, and records every request with
// its connection and times, and the most connections open at once.
type robotsListSite struct {
	robots func(w http.ResponseWriter, r *http.Request, n int) // n: robots.txt requests so far, this one included

	mu      sync.Mutex
	reqs    []siteReq
	hits    map[string]int
	open    int
	maxOpen int
	conns   int
}

type siteReq struct {
	conn       int
	path       string
	start, end time.Time
}

type siteConnKey struct{}

func (s *robotsListSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.mu.Lock()
	s.hits[r.URL.Path]++
	n := s.hits[r.URL.Path]
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.reqs = append(s.reqs, siteReq{conn: r.Context().Value(siteConnKey{}).(int), path: r.URL.Path, start: start, end: time.Now()})
		s.mu.Unlock()
	}()
	switch r.URL.Path {
	case "/robots.txt", "/robots-moved.txt":
		s.robots(w, r, n)
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

// crawlRobotsList crawls a robotsListSite on loopback to the end, the
// seed "/" alone in the host's first list, a politeness delay of 10 ms
// (set changes the config further, when not nil), and returns what was
// stored (paths) and the site for its records.
func crawlRobotsList(t *testing.T, robotsTxt func(w http.ResponseWriter, r *http.Request, n int), set func(*NodeConfig)) (map[string]bool, *robotsListSite) {
	t.Helper()
	site := &robotsListSite{robots: robotsTxt, hits: map[string]int{}}
	srv := &http.Server{Handler: site,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			site.mu.Lock()
			defer site.mu.Unlock()
			site.conns++
			return context.WithValue(ctx, siteConnKey{}, site.conns)
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			site.mu.Lock()
			defer site.mu.Unlock()
			switch st {
			case http.StateNew:
				site.open++
				site.maxOpen = max(site.maxOpen, site.open)
			case http.StateClosed, http.StateHijacked:
				site.open--
			}
		}}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := crawlSite(t, srv, ln, "listsite.test", func(cfg *NodeConfig) {
		cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond, MaxCrawlDelay: 2 * time.Second,
			ErrorDelay: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxRetries: 2}
		if set != nil {
			set(cfg)
		}
	})
	site.mu.Lock()
	defer site.mu.Unlock()
	if site.maxOpen > 1 {
		t.Errorf("%d connections open at once", site.maxOpen)
	}
	return got, site
}

// crawlSite serves srv on ln, as host name host, and crawls it to the end
// from "/" (depth 2, 2 fetchers, a 10 ms reconnect gap; set changes the
// config further); it returns the paths stored.
func crawlSite(t *testing.T, srv *http.Server, ln net.Listener, host string, set func(*NodeConfig)) map[string]bool {
	t.Helper()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	seed := fmt.Sprintf("http://%s:%d/", host, ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, dir, []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 2)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond}
	set(&cfg)
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
	return got
}

// connOf returns the connection of path's first request, 0 when none.
func (s *robotsListSite) connOf(path string) int {
	for _, r := range s.reqs {
		if r.path == path {
			return r.conn
		}
	}
	return 0
}

const privateRules = "User-agent: *\nDisallow: /private/\n"

func servePrivateRules(w http.ResponseWriter, r *http.Request, n int) { fmt.Fprint(w, privateRules) }

// wantCrawled checks that /, /a and /b were stored and /private/x never
// asked for.
func wantCrawled(t *testing.T, got map[string]bool, s *robotsListSite) {
	t.Helper()
	if len(got) != 3 || !got["/"] || !got["/a"] || !got["/b"] || s.hits["/private/x"] != 0 {
		t.Errorf("stored %v, requests %v; want /, /a, /b stored and /private/x never asked", got, s.hits)
	}
}

// TestNodeRobotsOneConnection: a host's first list fetches robots.txt and
// then the URLs it allows over one connection; the next list (rules
// cached) over one more, or two when /a and /b go out in two lists (the
// partial wait is 1 ms: a slow writer may hand the scheduler /a before /b).
// (Connections are not kept between lists here: TestNodeKeepsConnection.)
func TestNodeRobotsOneConnection(t *testing.T) {
	got, s := crawlRobotsList(t, servePrivateRules, noKeepIdle)
	wantCrawled(t, got, s)
	if s.hits["/robots.txt"] != 1 || s.connOf("/robots.txt") != s.connOf("/") || s.connOf("/a") == s.connOf("/") ||
		s.conns < 2 || s.conns > 3 {
		t.Errorf("robots.txt asked %d times on connection %d, / on %d, /a on %d, %d connections; want once, one connection for both, /a on another, 2 or 3 in all",
			s.hits["/robots.txt"], s.connOf("/robots.txt"), s.connOf("/"), s.connOf("/a"), s.conns)
	}
}

// TestNodeRobotsCrawlDelayFirst: a Crawl-delay longer than the politeness
// delay makes the robots.txt visit the host's list: the seed goes out on
// a connection of its own, at least the Crawl-delay later.
func TestNodeRobotsCrawlDelayFirst(t *testing.T) {
	got, s := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
		fmt.Fprint(w, privateRules+"Crawl-delay: 0.3\n")
	}, noKeepIdle)
	wantCrawled(t, got, s)
	if s.hits["/robots.txt"] != 1 || s.connOf("/robots.txt") == s.connOf("/") {
		t.Errorf("robots.txt asked %d times, on connection %d, / on %d; want once, / on another", s.hits["/robots.txt"], s.connOf("/robots.txt"), s.connOf("/"))
	}
	var robotsEnd, rootStart time.Time
	for _, r := range s.reqs {
		switch r.path {
		case "/robots.txt":
			robotsEnd = r.end
		case "/":
			rootStart = r.start
		}
	}
	if gap := rootStart.Sub(robotsEnd); gap < 300*time.Millisecond-time.Millisecond {
		t.Errorf("/ asked %v after robots.txt, want at least the Crawl-delay 300ms", gap)
	}
}

// noKeepIdle closes each list's connection at its end (collector.Config.KeepIdle).
func noKeepIdle(cfg *NodeConfig) { cfg.Collector.KeepIdle = -1 }

// TestNodeKeepsConnection: with connections kept between lists (the
// node's default, node_keep.go), robots.txt and every list of the host go
// over one connection, never two at once.
func TestNodeKeepsConnection(t *testing.T) {
	got, s := crawlRobotsList(t, servePrivateRules, nil)
	wantCrawled(t, got, s)
	if s.hits["/robots.txt"] != 1 || s.conns != 1 || s.connOf("/a") != s.connOf("/") {
		t.Errorf("robots.txt asked %d times, / on connection %d, /a on %d, %d connections; want once, all on one",
			s.hits["/robots.txt"], s.connOf("/"), s.connOf("/a"), s.conns)
	}
}

// TestNodeRobotsRedirectFallback: a robots.txt that redirects (here to
// the same origin) is followed as before, its first hop not asked again,
// and the list goes out after it on a connection of its own.
func TestNodeRobotsRedirectFallback(t *testing.T) {
	got, s := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "/robots-moved.txt", http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, privateRules)
	}, nil)
	wantCrawled(t, got, s)
	if s.hits["/robots.txt"] != 1 || s.hits["/robots-moved.txt"] != 1 || s.hits["/"] != 1 {
		t.Errorf("requests %v; want robots.txt, robots-moved.txt and / once each", s.hits)
	}
}

// TestNodeRobotsHostile: robots.txt cut mid-body (unreachable, no copy:
// nothing else asked, robots.txt asked again after the back-off until the
// URL gives up), and robots.txt over the parse limit (its first 512 KiB
// obeyed; the list goes on over a new connection).
func TestNodeRobotsHostile(t *testing.T) {
	t.Run("cut", func(t *testing.T) {
		got, s := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte("User-agent: *\nDisall"))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, nil)
		if len(got) != 0 || len(s.hits) != 1 || s.hits["/robots.txt"] < 2 {
			t.Errorf("stored %v, requests %v; want nothing stored, robots.txt only, asked again", got, s.hits)
		}
	})
	t.Run("zstd window past the cap", func(t *testing.T) {
		// A zstd frame asking for a 16 MiB window, past the 8 MiB the
		// collector decodes (RFC 8878 lets it refuse): nothing of the
		// file decodes, which is not a file without rules.
		var b bytes.Buffer
		w, _ := zstd.NewWriter(&b, zstd.WithSingleSegment(false))
		w.Write([]byte(privateRules))
		w.Close()
		if fhd := b.Bytes()[4]; fhd&0xe3 != 0 {
			t.Fatalf("frame header descriptor %#x: not a frame with a window descriptor next", fhd)
		}
		b.Bytes()[5] = 14 << 3 // 2^(10+14)
		got, s := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Encoding", "zstd")
			w.Write(b.Bytes())
		}, nil)
		if len(got) != 0 || len(s.hits) != 1 || s.hits["/robots.txt"] < 2 {
			t.Errorf("stored %v, requests %v; want nothing stored, robots.txt only, asked again", got, s.hits)
		}
	})
	t.Run("too large", func(t *testing.T) {
		big := privateRules + strings.Repeat("# padding to go past the parse limit\n", 600<<10/37)
		got, s := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) { fmt.Fprint(w, big) }, nil)
		wantCrawled(t, got, s)
		if s.hits["/robots.txt"] != 1 || s.connOf("/robots.txt") == s.connOf("/") {
			t.Errorf("robots.txt asked %d times on connection %d, / on %d; want once, / on the next", s.hits["/robots.txt"], s.connOf("/robots.txt"), s.connOf("/"))
		}
	})
}
