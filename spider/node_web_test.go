package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/tools/testweb"
)

// startWeb serves a generated web on loopback and returns it with a lookup
// function that resolves through the web's own DNS server with kspider's
// resolver.
func startWeb(t *testing.T, cfg testweb.Config, log *bytes.Buffer) (*testweb.Server, LookupFunc) {
	t.Helper()
	srv, res := startWebResolver(t, cfg, log)
	return srv, func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
}

// startWebResolver is startWeb with the caching resolver itself.
func startWebResolver(t *testing.T, cfg testweb.Config, log *bytes.Buffer) (*testweb.Server, *resolver.Resolver) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := testweb.Start(ctx, testweb.Generate(cfg), testweb.ServeConfig{
		HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: log,
		SlowDelay: 200 * time.Millisecond, StallFor: 500 * time.Millisecond,
		EndlessFor: time.Second, EndlessBytes: 8 << 20, BombSize: 64 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 500 * time.Millisecond, Network: "ip4",
		// The web's one DNS server times out on purpose for its dead
		// names; marked down for the default 10 s it would fail every name.
		DownFor: 100 * time.Millisecond, ServFailTTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return srv, res
}

// scopeNone turns the trap filters off, so the crawl can be compared with
// the truth, which knows nothing of them.
func scopeNone() scope.Config { return scope.Config{} }

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func urlCounts(c []testweb.URLCount) []string {
	var s []string
	for _, x := range c {
		s = append(s, fmt.Sprint(x))
	}
	return s
}

// checkPolite audits the web's request log: no URL fetched twice, nothing
// robots.txt forbids, never two connections or requests at once on a host.
// It closes the web first: the server's log flusher writes into log every
// second, so reading it while the web runs is a data race.
func checkPolite(t *testing.T, srv *testweb.Server, log *bytes.Buffer) []testweb.Entry {
	t.Helper()
	return checkPoliteAcross(t, srv, log, false)
}

// checkPoliteAcross is checkPolite for a crawl over restarts: the node
// keeps robots.txt rules in memory only, so each run fetches a host's
// robots.txt again, and a page being received when a run stopped is asked
// again by the next (the store is checked for pages stored twice instead).
func checkPoliteAcross(t *testing.T, srv *testweb.Server, log *bytes.Buffer, restarts bool) []testweb.Entry {
	t.Helper()
	return politeCheck(t, srv, log, restarts, nil)
}

// checkPoliteExcused is checkPolite forgiving, for each URL, as many
// repeated requests as retried counts failures the node logged for it
// (retryLog): an answer the server logged whole may have been cut or
// timed out at the node, under load, and fetched again. A robots.txt is
// forgiven as many as the node logged its origin's robots.txt unreachable.
func checkPoliteExcused(t *testing.T, srv *testweb.Server, log *bytes.Buffer, retried map[string]int) []testweb.Entry {
	t.Helper()
	return politeCheck(t, srv, log, false, retried)
}

// retryLog is a NodeConfig.Logf that counts, by refetchKey, the URLs whose
// fetch the node logged as failed ("fetch URL: ...", "robots.txt of
// ORIGIN unreachable ...": its robots.txt and the hop it may redirect to),
// and drops the rest. Before, a robots.txt the node timed out on under load
// (logged whole by the server) and fetched again once its back-off passed
// was taken for a duplicate fetch (5 hosts' robots.txt once).
func retryLog(mu *sync.Mutex, retried map[string]int) func(string, ...any) {
	return func(format string, args ...any) {
		if len(args) == 0 {
			return
		}
		arg, _ := args[0].(string)
		var us []string
		switch {
		case strings.HasPrefix(format, "fetch %s"):
			us = []string{arg}
		case strings.HasPrefix(format, "robots.txt of %s unreachable"):
			// The chain failed somewhere: the test web's robots.txt
			// redirects (RobotsRedirect) to /robots-moved.txt on its host.
			us = []string{arg + "/robots.txt", arg + "/robots-moved.txt"}
		default:
			return
		}
		mu.Lock()
		for _, u := range us {
			retried[refetchKey(u)]++
		}
		mu.Unlock()
	}
}

// refetchKey is a URL as the web's log and the node both name it: scheme,
// host name without port, and target.
func refetchKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Hostname() + u.RequestURI()
}

func politeCheck(t *testing.T, srv *testweb.Server, log *bytes.Buffer, restarts bool, retried map[string]int) []testweb.Entry {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := testweb.ReadLog(bytes.NewReader(log.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if restarts {
		var pages []testweb.Entry
		for _, e := range entries {
			if e.Target != "/robots.txt" {
				pages = append(pages, e)
			}
		}
		entries = pages
	}
	rep := testweb.AuditEntries(entries, testweb.AuditOptions{})
	conns := testweb.AuditEntries(withoutAbandoned(entries), testweb.AuditOptions{})
	rep.MaxConnsPerHost, rep.MaxConnsHost, rep.MaxInFlightPerHost = conns.MaxConnsPerHost, conns.MaxConnsHost, conns.MaxInFlightPerHost
	// A request repeated after a failed answer (5xx, a cut body) is a
	// retry, not a duplicate fetch.
	dups, dupList := testweb.Refetches(entries, 5)
	dupText := urlCounts(dupList)
	if restarts {
		dups = 0
	}
	if retried != nil {
		_, all := testweb.Refetches(entries, len(entries))
		dups, dupText = 0, nil
		excused, excusedRobots := 0, 0
		for _, c := range all {
			failed := retried[refetchKey(c.URL)]
			if n := c.Count - 1 - failed; n > 0 {
				dups += n
				dupText = append(dupText, fmt.Sprintf("%s fetched %d times, %d failures logged", c.URL, c.Count, failed))
			}
			if n := min(c.Count-1, failed); n > 0 {
				excused += n
				if strings.HasSuffix(c.URL, "/robots.txt") {
					excusedRobots += n
				}
			}
		}
		t.Logf("fetched again after a failure the node logged: %d requests (%d of robots.txt)", excused, excusedRobots)
	}
	if dups > 0 || rep.Forbidden > 0 || rep.MaxConnsPerHost > 1 || rep.MaxInFlightPerHost > 1 {
		t.Errorf("impolite: %d duplicate fetches %q, %d forbidden %v, max %d connections per host (%s), max %d in flight",
			dups, head(dupText, 10), rep.Forbidden, head(rep.ForbiddenURLs, 5), rep.MaxConnsPerHost, rep.MaxConnsHost, rep.MaxInFlightPerHost)
	}
	return entries
}

// checkGaps checks the politeness delay in the web's log: between two
// lists of a host (requests on different connections, robots.txt aside)
// the host rests at least delay, and at least its robots.txt Crawl-delay
// (capped at crawlDelayCap) when it has one. A list that needed a second
// connection (the server closed the first) shows a gap of only the
// reconnect gap: only hosts that behave normally are checked.
func checkGaps(t *testing.T, entries []testweb.Entry, web *testweb.Web, delay, crawlDelayCap time.Duration) {
	t.Helper()
	byHost := map[string][]testweb.Entry{}
	for _, e := range entries {
		if e.Kind == "req" && e.Target != "/robots.txt" {
			byHost[e.Host] = append(byHost[e.Host], e)
		}
	}
	checked, delayed := 0, 0
	for host, reqs := range byHost {
		h, ok := web.Host(host)
		if !ok || h.Behaviour != testweb.BehaviourNormal {
			continue
		}
		want := delay
		if cd := h.CrawlDelay(DefaultUserAgent); cd > 0 {
			want = max(want, min(cd, crawlDelayCap))
			delayed++
		}
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].Start < reqs[j].Start })
		for i := 1; i < len(reqs); i++ {
			if reqs[i].Conn == reqs[i-1].Conn {
				continue
			}
			checked++
			if gap := time.Duration(reqs[i].Start - reqs[i-1].End); gap < want-time.Millisecond {
				t.Errorf("%s: %v between two lists (%s then %s), want at least %v", host, gap, reqs[i-1].Target, reqs[i].Target, want)
				return
			}
		}
	}
	t.Logf("gaps: %d list boundaries checked, %d hosts with a Crawl-delay", checked, delayed)
}

// withoutAbandoned drops the connections on which the server kept sending
// an endless or stalled response after the client gave up on it (and their
// requests): the server notices the client's close only at its next write,
// so its record of the connection ends late and would overlap the client's
// next connection to the host, which the client opened after closing this
// one and waiting the reconnect gap.
func withoutAbandoned(entries []testweb.Entry) []testweb.Entry {
	drop := map[uint64]bool{}
	for _, e := range entries {
		if e.Kind == "req" && (e.Note == "endless body cut" || e.Note == "stalled") {
			drop[e.Conn] = true
		}
	}
	var out []testweb.Entry
	for _, e := range entries {
		if !drop[e.Conn] {
			out = append(out, e)
		}
	}
	return out
}

// TestRetryLogRobots: the politeness audit of TestNodeThousandHosts
// forgives a robots.txt fetched again after the node logged it
// unreachable (timed out under load, logged whole by the server), once per
// failure logged, and nothing for a line about something else.
func TestRetryLogRobots(t *testing.T) {
	var mu sync.Mutex
	retried := map[string]int{}
	logf := retryLog(&mu, retried)
	logf("robots.txt of %s unreachable (%d times running)", "http://h1.test:8080", 1)
	logf("robots.txt of %s unreachable: using the copy fetched before", "http://h1.test:8080")
	logf("fetch %s: %v: %v", "http://h2.test:8080/a?b", "timeout", "first byte")
	logf("spider: resuming after an unclean stop: %d pages", 3)
	want := map[string]int{"http://h1.test/robots.txt": 2, "http://h1.test/robots-moved.txt": 2, "http://h2.test/a?b": 1}
	if fmt.Sprint(retried) != fmt.Sprint(want) {
		t.Errorf("failures counted %v, want %v", retried, want)
	}
}
