package spider

import (
	"context"
	"errors"
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

// hostileWeb is a hand-written web on one loopback listener: every host
// name resolves to 127.0.0.1, and the handler sees the Host header.
type hostileWeb struct {
	ln   net.Listener
	port int
	mu   sync.Mutex
	reqs map[string]int // "host path" -> requests
}

func startHostile(t *testing.T, h func(w http.ResponseWriter, r *http.Request, web *hostileWeb)) *hostileWeb {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := &hostileWeb{ln: ln, port: ln.Addr().(*net.TCPAddr).Port, reqs: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.Host)
		web.mu.Lock()
		web.reqs[host+" "+r.URL.RequestURI()]++
		web.mu.Unlock()
		h(w, r, web)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return web
}

// url is an absolute URL of host on the web.
func (w *hostileWeb) url(host, path string) string {
	return fmt.Sprintf("http://%s:%d%s", host, w.port, path)
}

func (w *hostileWeb) count(host, path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reqs[host+" "+path]
}

func (w *hostileWeb) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.reqs {
		n += c
	}
	return n
}

// hostileConfig is a node on a hostile web: short delays, so that a crawl
// that ends does so in seconds.
func hostileConfig(t *testing.T, dir string, seeds []string, depth int) NodeConfig {
	cfg := nodeConfigFor(t, dir, seeds, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, depth)
	cfg.Collector = collector.Config{Fetchers: 4, ReconnectGap: 10 * time.Millisecond, ConnectTimeout: 5 * time.Second,
		FirstByte: 5 * time.Second, ResponseTimeout: 10 * time.Second}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond, MaxCrawlDelay: time.Second,
		ErrorDelay: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxRetries: 2}
	return cfg
}

// runHostile runs a node on cfg for at most limit and fails the test
// when the crawl did not end by itself.
func runHostile(t *testing.T, cfg NodeConfig, limit time.Duration) *NodeSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sum, err := runNode(t, ctx, cfg)
	if err != nil || !sum.Finished {
		t.Fatalf("the crawl did not end by itself within %v: %+v, %v", limit, sum, err)
	}
	return sum
}

func htmlLinks(w http.ResponseWriter, links ...string) {
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<html><body>")
	for _, l := range links {
		fmt.Fprintf(w, `<a href="%s">x</a>`, l)
	}
	fmt.Fprint(w, "</body></html>")
}

// TestNodeHostGoesDown: a host whose robots.txt and first page were served
// and which then refuses every connection. Its other URLs fail to connect
// before anything is sent; they must still count as failures (retried a
// bounded number of times), or the node hands the host's list out again
// and again and the crawl never ends.
func TestNodeHostGoesDown(t *testing.T) {
	var once sync.Once
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			once.Do(func() { web.ln.Close() }) // the connection being served goes on
			w.Header().Set("Connection", "close")
			htmlLinks(w, "/a", "/b")
		default:
			htmlLinks(w)
		}
	})
	dir := t.TempDir()
	sum := runHostile(t, hostileConfig(t, dir, []string{web.url("down.test", "/")}, 2), 30*time.Second)
	if sum.Stored != 1 || sum.Errors == 0 {
		t.Errorf("summary %+v: want 1 page stored and the failures counted", *sum)
	}
	if got := storedURLs(t, dir); !got[web.url("down.test", "/")] || len(got) != 1 {
		t.Errorf("stored %v", got)
	}
}

// TestNodeCutBodyRetried: a page whose body ends before its
// Content-Length (the server hung up, or the response timed out) is not
// the page. Stored as fetched, it stood for the page for good, with the
// links of its missing part never seen. It is fetched again, and only
// when every try was cut is what arrived stored.
func TestNodeCutBodyRetried(t *testing.T) {
	cut := func(w http.ResponseWriter, links ...string) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "1000")
		fmt.Fprint(w, "<html><body>")
		for _, l := range links {
			fmt.Fprintf(w, `<a href="%s">x</a>`, l)
		}
		// The handler returns short of the length: the server hangs up.
	}
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			htmlLinks(w, "/once", "/always")
		case "/once": // cut the first time only
			if web.count("main.test", "/once") == 1 {
				cut(w, "/partial")
				return
			}
			htmlLinks(w, "/partial", "/full")
		case "/always":
			cut(w, "/fromcut")
		default:
			htmlLinks(w)
		}
	})
	dir := t.TempDir()
	cfg := hostileConfig(t, dir, []string{web.url("main.test", "/")}, 2)
	sum := runHostile(t, cfg, 30*time.Second)
	got := storedURLs(t, dir)
	for _, p := range []string{"/", "/once", "/partial", "/full", "/always", "/fromcut"} {
		if !got[web.url("main.test", p)] {
			t.Errorf("%s not stored", p)
		}
	}
	if n := web.count("main.test", "/once"); n != 2 {
		t.Errorf("/once asked %d times, want 2", n)
	}
	if n := web.count("main.test", "/always"); n != cfg.Scheduler.MaxRetries+1 {
		t.Errorf("/always asked %d times, want %d", n, cfg.Scheduler.MaxRetries+1)
	}
	if sum.Stored != uint64(len(got)) || sum.Errors != uint64(1+cfg.Scheduler.MaxRetries) {
		t.Errorf("summary %+v: want %d stored, %d errors (the cut tries)", *sum, len(got), 1+cfg.Scheduler.MaxRetries)
	}
}

// TestNodeRedirectChainBounded: a redirect's target keeps the redirecting
// page's depth, so a host that answers /r/N with a redirect to /r/N+1 was
// crawled without end at max_depth 1. Now maxRedirectHops redirects in a
// row are followed, and a chain within it (a redirect loop too) is
// followed to its end.
func TestNodeRedirectChainBounded(t *testing.T) {
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		var k int
		fmt.Sscanf(r.URL.Path[min(3, len(r.URL.Path)):], "%d", &k)
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			htmlLinks(w, "/r/0", "/s/0", "/loop/a")
		case r.URL.Path == "/loop/a":
			http.Redirect(w, r, "/loop/b", http.StatusFound)
		case r.URL.Path == "/loop/b":
			http.Redirect(w, r, "/loop/a", http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/s/") && k < maxRedirectHops:
			http.Redirect(w, r, fmt.Sprintf("/s/%d", k+1), http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/s/"):
			htmlLinks(w) // the end of a chain of maxRedirectHops
		default:
			http.Redirect(w, r, fmt.Sprintf("/r/%d", k+1), http.StatusFound)
		}
	})
	dir := t.TempDir()
	sum := runHostile(t, hostileConfig(t, dir, []string{web.url("main.test", "/")}, 1), 30*time.Second)
	got := storedURLs(t, dir)
	for k := 0; k <= maxRedirectHops; k++ {
		for _, p := range []string{"/r/%d", "/s/%d"} {
			if u := web.url("main.test", fmt.Sprintf(p, k)); !got[u] {
				t.Errorf("%s not stored", u)
			}
		}
	}
	if u := web.url("main.test", fmt.Sprintf("/r/%d", maxRedirectHops+1)); got[u] {
		t.Errorf("%s stored: %d redirects in a row followed", u, maxRedirectHops+1)
	}
	if want := 1 + 2*(maxRedirectHops+1) + 2; len(got) != want || sum.Stored != uint64(want) || sum.Rejected != 1 {
		t.Errorf("summary %+v, %d stored: want %d stored, 1 rejected", *sum, len(got), want)
	}
}

// TestRetryAfterForms: a 429 or 503's Retry-After as an HTTP date, or as
// more seconds than an int holds, counted as none, so the host was asked
// again at the usual back-off.
func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	most := time.Duration(1<<20) * time.Second
	for v, want := range map[string]time.Duration{
		"":                                0,
		"120":                             2 * time.Minute,
		" 7 ":                             7 * time.Second,
		"-5":                              0,
		"garbage":                         0,
		"1.5":                             0,
		"99999999999999999999999":         most,
		"Tue, 24 Nov 2026 12:10:00 GMT":   10 * time.Minute,
		"Tuesday, 24-Nov-26 12:00:30 GMT": 30 * time.Second, // RFC 850
		"Tue Nov 24 12:01:00 2026":        time.Minute,      // asctime
		"Tue, 24 Nov 2026 11:00:00 GMT":   0,                // past
		"Sat, 01 Jan 2100 00:00:00 GMT":   most,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNodeLongHostName: a link to a host name of 253 characters (the most
// DNS allows) with a port makes a scheduler host key ("https:", name,
// port) of up to 265 bytes. Such keys once stopped the crawl ("scheduler
// add: bad host name"), then were rejected as over the scheduler's 255
// bytes, a valid URL never crawled; now they are crawled, and such a seed
// is taken.
func TestNodeLongHostName(t *testing.T) {
	long := strings.Repeat(strings.Repeat("a", 62)+".", 4)[:252] + "t"
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			htmlLinks(w, web.url(long, "/"), fmt.Sprintf("https://%s:65000/", long), "/a")
		default:
			htmlLinks(w)
		}
	})
	dir := t.TempDir()
	sum := runHostile(t, hostileConfig(t, dir, []string{web.url("site.test", "/")}, 2), 30*time.Second)
	if sum.Rejected != 0 {
		t.Errorf("summary %+v: want no link rejected", *sum)
	}
	if got := storedURLs(t, dir); !got[web.url("site.test", "/a")] || !got[web.url(long, "/a")] || len(got) != 4 {
		t.Errorf("stored %v, want / and /a of both hosts", got)
	}
	if err := CheckSeeds([]string{web.url(long, "/"), fmt.Sprintf("https://%s:65000/", long)}); err != nil {
		t.Errorf("CheckSeeds of seeds with a 253-character host and a port: %v", err)
	}
}

// TestNodeRedirectChainRestart: a redirect chain crawled across restarts
// is bounded as one crawled in one run. The count lived in memory: each
// run started it again at 0, so a chain cut by a stop went maxRedirectHops
// further per run (here /r/18 reached over three runs; with kill -9 in a
// loop, without end); now it is the target's scheduler record's, which
// the pass over the store a raised limits.max_depth makes reads too.
func TestNodeRedirectChainRestart(t *testing.T) {
	var mu sync.Mutex
	var stop context.CancelFunc
	stopAt := -1
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		var k int
		fmt.Sscanf(r.URL.Path[min(3, len(r.URL.Path)):], "%d", &k)
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			htmlLinks(w, "/r/0")
		default:
			mu.Lock()
			if k == stopAt {
				stop() // this run ends here, mid-chain
			}
			mu.Unlock()
			http.Redirect(w, r, fmt.Sprintf("/r/%d", k+1), http.StatusFound)
		}
	})
	dir := t.TempDir()
	cfg := hostileConfig(t, dir, []string{web.url("main.test", "/")}, 1)
	for run, at := range []int{4, 8, -1} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		mu.Lock()
		stop, stopAt = cancel, at
		mu.Unlock()
		sum, err := runNode(t, ctx, cfg)
		cancel()
		if at < 0 && (err != nil || !sum.Finished) {
			t.Fatalf("last run did not finish: %+v, %v", sum, err)
		}
		if at >= 0 && !errors.Is(err, ErrInterrupted) {
			t.Fatalf("run %d: %v, want interrupted at /r/%d", run, err, at)
		}
	}
	// limits.max_depth raised: the pass over the store reads /r/10 back,
	// and its target is one hop too many still.
	cfg.MaxDepth = 2
	if sum, err := runNode(t, context.Background(), cfg); err != nil || !sum.Finished {
		t.Fatalf("run with the depth raised: %+v, %v", sum, err)
	}
	got := storedURLs(t, dir)
	for k := 0; k <= maxRedirectHops+8; k++ {
		u := web.url("main.test", fmt.Sprintf("/r/%d", k))
		if k > maxRedirectHops && got[u] {
			t.Errorf("%s stored: %d redirects in a row followed over the runs", u, k)
		}
		if k <= maxRedirectHops && !got[u] {
			t.Errorf("%s not stored", u)
		}
	}
}
