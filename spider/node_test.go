package spider

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// crawlDelayCap caps the test web's Crawl-delay (1 s) in the node tests.
const crawlDelayCap = 300 * time.Millisecond

// nodeConfig is a node on a test web: no politeness delay beyond one list
// at a time per host, short partial-list wait, no trap filters.
func nodeConfig(t *testing.T, dir string, srv *testweb.Server, lookup LookupFunc, depth int) NodeConfig {
	return nodeConfigFor(t, dir, srv.SeedURLs(), lookup, srv.CertPool(), depth)
}

func nodeConfigFor(t *testing.T, dir string, seeds []string, lookup LookupFunc, roots *x509.CertPool, depth int) NodeConfig {
	noTraps := scopeNone()
	return NodeConfig{
		Dir: dir, Seeds: seeds, MaxDepth: depth, Scope: &noTraps,
		Lookup: lookup, RootCAs: roots,
		// The gap between a host's connections (within a list, after
		// robots.txt, between lists) lets the server see the last one
		// closed before the next opens, for the audit.
		Collector: collector.Config{Fetchers: 16, ConnectTimeout: 5 * time.Second, FirstByte: 5 * time.Second,
			ResponseTimeout: 10 * time.Second, ReconnectGap: 100 * time.Millisecond},
		Scheduler: scheduler.Config{PartialWait: 20 * time.Millisecond, MinDelay: 100 * time.Millisecond, MaxCrawlDelay: crawlDelayCap,
			ErrorDelay: 500 * time.Millisecond, MaxRetries: 5, Window: 1 << 16, Columns: 101},
		SyncInterval: 20 * time.Millisecond,
		Logf:         t.Logf,
	}
}

// truthURLs is the set of canonical URLs a polite crawler reaches within
// depth on srv's web.
func truthURLs(t *testing.T, srv *testweb.Server, depth int) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for _, d := range srv.Truth().Crawlable(robots.ProductToken(DefaultUserAgent), depth, 0) {
		c, err := urlnorm.Canonical(nil, d.URL, nil)
		if err != nil {
			t.Fatalf("truth URL %q has no canonical form: %v", d.URL, err)
		}
		want[c] = true
	}
	return want
}

// storedURLs scans the store and fails on any URL stored twice.
func storedURLs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	r, err := storage.OpenReader([]string{dir + "/pages"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		if got[p.URL] {
			t.Errorf("stored twice: %s", p.URL)
		}
		got[p.URL] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func compareSets(t *testing.T, got, want map[string]bool) {
	t.Helper()
	var missing, extra []string
	for u := range want {
		if !got[u] {
			missing = append(missing, u)
		}
	}
	for u := range got {
		if !want[u] {
			extra = append(extra, u)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("crawl differs from the truth: %d got, %d expected; missing %d %v; extra %d %v",
			len(got), len(want), len(missing), head(missing, 10), len(extra), head(extra, 10))
	}
}

func runNode(t *testing.T, ctx context.Context, cfg NodeConfig) (*NodeSummary, error) {
	t.Helper()
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, runErr := n.Run(ctx)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return sum, runErr
}

// TestNodeMatchesTruth crawls a plain test web to the end with the node and
// checks that every crawlable URL within the depth is stored exactly once,
// nothing else is, and the web's audit finds no duplicate fetch, nothing
// robots.txt forbids and never two connections at once on a host.
func TestNodeMatchesTruth(t *testing.T) {
	var log bytes.Buffer
	webCfg := testweb.Config{Hosts: 40, Seed: 7, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}
	srv, lookup := startWeb(t, webCfg, &log)
	const depth = 3
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := runNode(t, ctx, nodeConfig(t, dir, srv, lookup, depth))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *sum)
	if !sum.Finished {
		t.Error("the crawl did not finish by itself")
	}
	got := storedURLs(t, dir)
	compareSets(t, got, truthURLs(t, srv, depth))
	if sum.Stored != uint64(len(got)) {
		t.Errorf("node says %d stored, the store holds %d", sum.Stored, len(got))
	}
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	checkGaps(t, checkPolite(t, srv, &log), testweb.Generate(webCfg), cfg.Scheduler.MinDelay, crawlDelayCap)
}

// runNodeUntil runs a node on cfg and cancels it once it has stored
// pages pages (a condition, not a sleep); it returns what Run returned.
// The cancel comes at the first lookup of a host to connect to once the
// count is reached, and that lookup fails, so the list that asked cannot
// be fetched and the crawl cannot end before the cancel. A goroutine
// polling the count alone (as before) could run too late under load: the
// crawl had finished, and Run returned nil.
func runNodeUntil(t *testing.T, cfg NodeConfig, pages uint64) (*NodeSummary, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n *Node
	lookup := cfg.Lookup
	if lookup == nil {
		t.Fatal("runNodeUntil needs cfg.Lookup")
	}
	cfg.Lookup = func(lctx context.Context, host string) ([]netip.Addr, error) {
		if n.Counters().Pages >= pages {
			cancel()
			return nil, errors.New("runNodeUntil: enough pages stored: the crawl is cut")
		}
		return lookup(lctx, host)
	}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Also when no host is looked up after the count is reached.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if n.Counters().Pages >= pages || ctx.Err() != nil {
				cancel()
				return
			}
		}
	}()
	sum, err := n.Run(ctx)
	cancel()
	if cerr := n.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return sum, err
}

// TestNodeStopResume cancels a crawl part way, reopens the directory and
// finishes it: the pages of both runs are the truth, none stored twice.
func TestNodeStopResume(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, depth)

	sum1, err := runNodeUntil(t, cfg, 150)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: got %v, want ErrInterrupted", err)
	}
	t.Logf("first run: %+v", *sum1)

	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	sum2, err := runNode(t, ctx2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second run: %+v", *sum2)
	if !sum2.Finished {
		t.Error("the resumed crawl did not finish by itself")
	}
	got := storedURLs(t, dir)
	compareSets(t, got, truthURLs(t, srv, depth))
	if sum1.Stored+sum2.Stored != uint64(len(got)) {
		t.Errorf("runs say %d+%d stored, the store holds %d", sum1.Stored, sum2.Stored, len(got))
	}
}

// TestNodeDirLocked: a second node on one directory is refused, naming the
// holder; once the first closes, the directory opens again.
func TestNodeDirLocked(t *testing.T) {
	dir := t.TempDir()
	cfg := NodeConfig{Dir: dir, Collector: collector.Config{Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, nil }}}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNode(cfg); !errors.Is(err, ErrDirLocked) {
		t.Fatalf("second node: %v, want ErrDirLocked", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to crawl: Run ends at once, finished.
	sum, err := n.Run(context.Background())
	if err != nil || !sum.Finished {
		t.Fatalf("empty run: %+v, %v", sum, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestHostKeyAndHeaderLines(t *testing.T) {
	for u, want := range map[string]string{
		"http://a.example/x":      "a.example",
		"http://a.example:8080?q": "a.example:8080",
		"https://a.example/":      "https:a.example",
		"https://[::1]:8443/p#f":  "https:[::1]:8443",
		"http://b.example":        "b.example",
	} {
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%q) = %q, want %q", u, got, want)
		}
	}
	for head, want := range map[string]string{
		"HTTP/1.1 200 OK\r\nA: b\r\nC: d\r\n\r\n": "A: b\r\nC: d\r\n",
		"HTTP/1.0 200 OK\nA: b\n\n":               "A: b\n",
		"HTTP/1.1 204 No Content\r\n\r\n":         "",
		"garbage":                                 "",
	} {
		if got := string(headerLines([]byte(head))); got != want {
			t.Errorf("headerLines(%q) = %q, want %q", head, got, want)
		}
	}
}
