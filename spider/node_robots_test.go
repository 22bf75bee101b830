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
	"github.com/kspider/kspider/spider/robots"
)

// crawlFlakyRobots crawls a robotsListSite whose robots.txt (disallowing
// /private/) is served once, then answered 503, with lists of one URL and
// a robots.txt that expires at once, so that every list asks for
// robots.txt again and meets the 503.
func crawlFlakyRobots(t *testing.T, staleFor time.Duration) (map[string]bool, map[string]int) {
	t.Helper()
	got, site := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n > 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		servePrivateRules(w, r, n)
	}, func(cfg *NodeConfig) {
		// The 10 ms politeness delay stays: with none, the next list's
		// connection could be accepted before the server's hook has
		// counted the last one closed (the client waits for the server's
		// FIN, not for its bookkeeping), and the site saw two open.
		cfg.Scheduler.ListLen = 1
		cfg.RobotsTTL, cfg.RobotsStaleFor = time.Nanosecond, staleFor
	})
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

// TestNodeRobotsRedirectTargetsForgotten: robots.txt of each of 20 hosts
// redirects to a host of its own. The record of when each origin's robots.txt
// connection closed (for the gap before a hop to the same origin) kept an
// entry for every redirect target for good: a hostile web naming a new
// target per host grew it without bound. Once the chains are over, nothing
// is kept.
func TestNodeRobotsRedirectTargetsForgotten(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		if name, ok := strings.CutPrefix(host, "from-"); ok {
			http.Redirect(w, r, fmt.Sprintf("http://to-%s:%d/robots.txt", name, port), http.StatusMovedPermanently)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	n := robotsTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 20 {
		v := n.robotsVerdictFor(ctx, fmt.Sprintf("http://from-%d.test:%d/page", i, port))
		if !v.ok || !v.fetched || v.rules.AllowedURL(fmt.Sprintf("http://from-%d.test:%d/private/x", i, port)) {
			t.Fatalf("host %d: ok %v, fetched %v, the redirect target's Disallow not applied", i, v.ok, v.fetched)
		}
	}
	n.robots.mu.Lock()
	defer n.robots.mu.Unlock()
	if len(n.robots.connected) != 0 {
		t.Errorf("after the chains, %d origins still kept: %v", len(n.robots.connected), n.robots.connected)
	}
}

// TestNodeRobotsRedirectPathAsWritten: a robots.txt redirect to "/a%2Fb|c"
// went out through net/url's String as "/a/b%7Cc", another resource; the
// node now asks for the path as written, on the request line too.
func TestNodeRobotsRedirectPathAsWritten(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.RequestURI {
		case "/robots.txt":
			http.Redirect(w, r, "/a%2Fb|c", http.StatusMovedPermanently)
		case "/a%2Fb|c":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	n := robotsTestNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v := n.robotsVerdictFor(ctx, fmt.Sprintf("http://site.test:%d/", port))
	if !v.ok || v.rules.AllowedURL(fmt.Sprintf("http://site.test:%d/private/x", port)) {
		t.Errorf("ok %v: the rules at the redirect's path as written not applied", v.ok)
	}
}

// robotsTestNode is a Node with only what robotsVerdictFor needs: its
// robots.txt Source and a collector whose every host is 127.0.0.1.
func robotsTestNode(t *testing.T) *Node {
	t.Helper()
	coll, err := collector.New(collector.Config{UserAgent: "kspider-test", Fetchers: 2, ReconnectGap: 10 * time.Millisecond,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.CloseIdle)
	n := &Node{cfg: NodeConfig{UserAgent: "kspider-test"}, coll: coll}
	n.robots = newNodeRobots(n)
	return n
}

// TestNodeRobotsUnreachableEvicted: an unreachable origin's DisallowAll
// was told from a fetched file's rules by the failure count read from the
// cache after the Source answered; with the origin evicted in between (a
// full cache), the count read 0 and the list's URLs were denied for good
// instead of waiting. The entry put here, DisallowAll with no failures, is
// what that lookup saw.
func TestNodeRobotsUnreachableEvicted(t *testing.T) {
	n := robotsTestNode(t)
	const origin = "http://down.test:81"
	n.robots.src.Cache.Put(origin, robots.DisallowAll(), time.Now(), time.Hour, 0)
	v := n.robotsVerdictFor(context.Background(), origin+"/page")
	if v.ok || v.rules != nil || v.failures < 1 {
		t.Errorf("unreachable origin: ok %v, rules %v, failures %d; want the list to wait", v.ok, v.rules, v.failures)
	}
}

// overBudgetRobots is a robots.txt whose wildcard patterns make checking
// the path long cost more than a check's budget (/no disallowed, /ok
// allowed).
func overBudgetRobots() (body, long string) {
	var hostile strings.Builder
	hostile.WriteString("User-agent: *\nAllow: /ok\nDisallow: /no\n")
	for i := 0; hostile.Len() < robots.DefaultMaxSize-64; i++ {
		x := strings.NewReplacer("0", "a", "1", "b").Replace(fmt.Sprintf("%020b", i))
		fmt.Fprintf(&hostile, "Disallow: /*%s*%s\n", x, x)
	}
	return hostile.String(), "/" + strings.Repeat("ab", 4000) + "0123456789"
}

// TestNodeRobotsOverBudget: a URL a hostile robots.txt's wildcard patterns
// made too costly to check is denied, by no rule; it showed only among the
// denied, so an operator could not tell "robots.txt said no" from
// "robots.txt too costly to check". The summary and the status now count
// it apart.
func TestNodeRobotsOverBudget(t *testing.T) {
	hostile, long := overBudgetRobots()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, hostile)
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<a href="/ok">ok</a> <a href="/no">no</a> <a href="%s">long</a>`, long)
		default:
			fmt.Fprint(w, "leaf")
		}
	})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	seed := fmt.Sprintf("http://site.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, t.TempDir(), []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 2)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := n.Run(ctx)
	if err != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, err)
	}
	if sum.Denied != 2 || sum.DeniedOverBudget != 1 {
		t.Errorf("denied %d, of them over budget %d; want 2 (/no, the long path), 1 (the long path)", sum.Denied, sum.DeniedOverBudget)
	}
	st := n.status(true)
	if st.Totals.RobotsOverBudget != 1 || st.Totals.RobotsCacheBytes == 0 {
		t.Errorf("status: robots_over_budget %d, robots_cache_bytes %d; want 1, > 0", st.Totals.RobotsOverBudget, st.Totals.RobotsCacheBytes)
	}
}

// TestNodeRobotsCheckedOnce: the URLs of a list whose robots.txt came on
// its own connection are checked against the rules once. The hook that
// skips the disallowed ones checked them, and the list's processing again,
// so a hostile robots.txt's budget was spent twice on each.
func TestNodeRobotsCheckedOnce(t *testing.T) {
	hostile, long := overBudgetRobots()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, hostile)
			return
		}
		fmt.Fprint(w, "leaf")
	})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	origin := fmt.Sprintf("http://site.test:%d", ln.Addr().(*net.TCPAddr).Port)
	// The host is new, so robots.txt comes on its first list's connection,
	// which holds the long path, seen first (the others may come later).
	cfg := nodeConfigFor(t, t.TempDir(), []string{origin + long, origin + "/ok", origin + "/no"}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 0)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond}
	cfg.Scheduler = scheduler.Config{PartialWait: 50 * time.Millisecond, MinDelay: 10 * time.Millisecond}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := n.Run(ctx)
	if err != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, err)
	}
	if sum.Stored != 1 || sum.Denied != 2 || sum.DeniedOverBudget != 1 {
		t.Errorf("stored %d, denied %d, of them over budget %d; want 1, 2, 1", sum.Stored, sum.Denied, sum.DeniedOverBudget)
	}
	rules, _ := n.robots.src.Cache.Get(origin, time.Now())
	if rules == nil || rules.OverBudget() != 1 {
		t.Fatalf("the long path's checks that ran out of budget: %d, want 1 (rules %v)", rules.OverBudget(), rules != nil)
	}
}
