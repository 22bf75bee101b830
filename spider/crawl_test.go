package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// startWeb serves a generated web on loopback and returns it with a lookup
// function that resolves through the web's own DNS server with kspider's
// resolver.
func startWeb(t *testing.T, cfg testweb.Config, log *bytes.Buffer) (*testweb.Server, LookupFunc) {
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
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 500 * time.Millisecond, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return srv, func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
}

// TestCrawlMatchesTruth crawls a well-behaved web to the end and checks that
// it fetched exactly what the web's ground truth says a polite crawler
// reaches within the depth limit, each URL once, one connection per host at
// a time, nothing robots.txt forbids, and that every page is in the store.
func TestCrawlMatchesTruth(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 7, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	dir := t.TempDir()
	noTraps := scopeNone()
	sum, err := Crawl(context.Background(), Config{
		Dir: dir, Seeds: srv.SeedURLs(), MaxDepth: depth, HostWorkers: 8,
		FetchTimeout: 5 * time.Second, Lookup: lookup, RootCAs: srv.CertPool(), Scope: &noTraps,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fetched %d, statuses %v, errors %v, robots denied %d, too deep %d, levels %d", sum.Fetched, sum.Statuses, sum.Errors, sum.RobotsDenied, sum.TooDeep, sum.Levels)

	got := map[string]bool{}
	for _, u := range sum.Fetches {
		if got[u] {
			t.Errorf("fetched twice: %s", u)
		}
		got[u] = true
	}
	compareSets(t, got, truthURLs(t, srv, depth))

	checkPolite(t, srv, &log)

	r, err := storage.OpenReader([]string{dir + "/pages"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stored := 0
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		stored++
		if !got[p.URL] {
			t.Errorf("stored page %s was not fetched", p.URL)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored != sum.Fetched || sum.Stored != uint64(sum.Fetched) {
		t.Errorf("stored %d pages (store says %d durable), fetched %d", stored, sum.Stored, sum.Fetched)
	}
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

// TestCrawlHostileWeb crawls a web with every kind of hostile host (redirect
// loops, stalls, endless bodies, gzip bombs, wrong lengths, pipelining
// breakers, calendar and symlink traps, DNS failures, spam domains, broken
// robots.txt files) and checks that the crawl ends, stays polite by the
// web's own audit, and still fetches every URL a polite crawler can reach
// (traps, which the filters cut short on purpose, and dead names aside).
func TestCrawlHostileWeb(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 150, Seed: 3, MaxPages: 150, MeanPageSize: 4000}, &log)
	const depth = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := Crawl(ctx, Config{
		Dir: t.TempDir(), Seeds: srv.SeedURLs(), MaxDepth: depth, HostWorkers: 16,
		FetchTimeout: 2 * time.Second, MaxBody: 1 << 20, Lookup: lookup, RootCAs: srv.CertPool(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fetched %d, statuses %v, errors %v, short %d, truncated %d, robots denied %d, rejected %v",
		sum.Fetched, sum.Statuses, sum.Errors, sum.ShortBodies, sum.Truncated, sum.RobotsDenied, sum.Rejected)
	fetched := map[string]bool{}
	for _, u := range sum.Fetches {
		fetched[u] = true
	}
	var missing []string
	for _, d := range srv.Truth().Crawlable(robots.ProductToken(DefaultUserAgent), depth, 0) {
		if d.Kind == "trap" || d.Kind == "dns-failure" {
			continue
		}
		c, err := urlnorm.Canonical(nil, d.URL, nil)
		if err == nil && !fetched[c] {
			missing = append(missing, c+" ("+d.Kind+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d crawlable URLs not fetched: %v", len(missing), head(missing, 10))
	}
	checkPolite(t, srv, &log)
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
func checkPolite(t *testing.T, srv *testweb.Server, log *bytes.Buffer) {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := testweb.Audit(bytes.NewReader(log.Bytes()), testweb.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DuplicateFetches > 0 || rep.Forbidden > 0 || rep.MaxConnsPerHost > 1 || rep.MaxInFlightPerHost > 1 {
		t.Errorf("impolite: %d duplicate fetches %v, %d forbidden %v, max %d connections per host (%s), max %d in flight",
			rep.DuplicateFetches, head(urlCounts(rep.Duplicates), 5), rep.Forbidden, head(rep.ForbiddenURLs, 5), rep.MaxConnsPerHost, rep.MaxConnsHost, rep.MaxInFlightPerHost)
	}
}
