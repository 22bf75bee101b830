package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/tools/testweb"
)

// demoReport is what `kspider demo --json` prints.
type demoReport struct {
	Web struct {
		Hosts int    `json:"hosts"`
		Seed  int64  `json:"seed"`
		HTTP  string `json:"http"`
		DNS   string `json:"dns"`
	} `json:"web"`
	Crawl     *spider.Summary `json:"crawl"`
	Crawlable int             `json:"truth_crawlable"` // what the web's ground truth says a polite crawler reaches
	Missing   int             `json:"truth_missing"`   // crawlable URLs not fetched
	Extra     int             `json:"truth_extra"`     // fetched URLs the truth does not list
	Audit     struct {
		Requests         int `json:"requests"`
		DuplicateFetches int `json:"duplicate_fetches"`
		Forbidden        int `json:"forbidden"`
		MaxConnsPerHost  int `json:"max_conns_per_host"`
	} `json:"audit"`
}

func runDemo(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "demo", "demo [--hosts N] [--seed S] [--depth D] [--plain] [--dir DIR] [--json]", `
Starts a generated test web on loopback (its own HTTP, HTTPS and DNS servers,
with hostile hosts unless --plain), crawls it from its seed URLs to the end of
the depth limit with one node, and prints a summary: what was fetched and
stored, how that compares with the web's ground truth, and the web's
politeness audit of the crawl. Nothing leaves this machine.`)
	hosts := fs.Int("hosts", 300, "hosts in the test web")
	seed := fs.Int64("seed", 1, "seed of the test web (same seed, same web)")
	depth := fs.Int("depth", 4, "link depth limit")
	workers := fs.Int("workers", 64, "hosts fetched at once")
	plain := fs.Bool("plain", false, "a well-behaved web: no hostile hosts, DNS failures or spam domains")
	dir := fs.String("dir", "", "keep the node's state (URL tree, pages) in DIR (default: a temporary directory, removed)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log every skipped URL and failed fetch to stderr")
	logFile := fs.String("log", "", "also write the test web's request log to FILE (JSON lines; see testweb audit)")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *hosts < 1 || *hosts > 100000 {
		return usagef("--hosts %d: want 1 to 100000", *hosts)
	}
	if *depth < 0 || *depth > 100 {
		return usagef("--depth %d: want 0 to 100", *depth)
	}
	stateDir := *dir
	if stateDir == "" {
		tmp, err := os.MkdirTemp("", "kspider-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		stateDir = tmp
	}

	progress := func(format string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(e.stderr, format+"\n", a...)
		}
	}
	progress("generating a test web of %d hosts (seed %d) ...", *hosts, *seed)
	web := testweb.Generate(testweb.Config{Hosts: *hosts, Seed: *seed, Plain: *plain})
	var log bytes.Buffer
	webCtx, stopWeb := context.WithCancel(ctx)
	defer stopWeb()
	srv, err := testweb.Start(webCtx, web, testweb.ServeConfig{
		HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: &log,
		// Hostile hosts misbehave briefly so the demo ends in seconds.
		SlowDelay: 300 * time.Millisecond, StallFor: time.Second, EndlessFor: 2 * time.Second,
		EndlessBytes: 16 << 20, BombSize: 64 << 20,
	})
	if err != nil {
		return fmt.Errorf("starting the test web: %w", err)
	}
	defer srv.Close()
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 500 * time.Millisecond, Network: "ip4"})
	if err != nil {
		return err
	}
	defer res.Close()

	var rep demoReport
	rep.Web.Hosts, rep.Web.Seed, rep.Web.HTTP, rep.Web.DNS = *hosts, *seed, srv.HTTPAddr(), srv.DNSAddr()
	progress("test web on http://%s (DNS %s); crawling to depth %d ...", srv.HTTPAddr(), srv.DNSAddr(), *depth)
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, a ...any) { fmt.Fprintf(e.stderr, format+"\n", a...) }
	}
	// net/http logs servers that send more than they announced; the test
	// web does that on purpose, and the crawl counts it itself.
	stdlog.SetOutput(io.Discard)
	defer stdlog.SetOutput(os.Stderr)
	sum, err := spider.Crawl(ctx, spider.Config{
		Dir: stateDir, Seeds: srv.SeedURLs(), MaxDepth: *depth, HostWorkers: *workers,
		FetchTimeout: 3 * time.Second, MaxBody: 2 << 20, RootCAs: srv.CertPool(), Logf: logf,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
	})
	if err != nil {
		return err
	}
	rep.Crawl = sum

	truth := map[string]bool{} // URL -> must be fetched
	for _, d := range srv.Truth().Crawlable(robots.ProductToken(spider.DefaultUserAgent), *depth, 0) {
		if c, err := urlnorm.Canonical(nil, d.URL, nil); err == nil {
			// Dead names cannot be fetched, and the scope filters cut
			// traps short on purpose: those may go either way.
			truth[c] = d.Kind != "dns-failure" && d.Kind != "trap"
		}
	}
	fetched := map[string]bool{}
	for _, u := range sum.Fetches {
		fetched[u] = true
	}
	for u, must := range truth {
		if !must {
			continue
		}
		rep.Crawlable++
		if !fetched[u] {
			rep.Missing++
			logf("crawlable but not fetched: %s", u)
		}
	}
	for u := range fetched {
		if _, listed := truth[u]; !listed {
			rep.Extra++
			logf("fetched but not in the truth: %s", u)
		}
	}
	if err := srv.FlushLog(); err != nil {
		return err
	}
	if *logFile != "" {
		if err := os.WriteFile(*logFile, log.Bytes(), 0o644); err != nil {
			return err
		}
	}
	audit, err := testweb.Audit(bytes.NewReader(log.Bytes()), testweb.AuditOptions{})
	if err != nil {
		return err
	}
	rep.Audit.Requests, rep.Audit.DuplicateFetches = audit.Requests, audit.DuplicateFetches
	rep.Audit.Forbidden, rep.Audit.MaxConnsPerHost = audit.Forbidden, audit.MaxConnsPerHost
	logf("audit: max connections per host %d (%s), max requests in flight per host %d", audit.MaxConnsPerHost, audit.MaxConnsHost, audit.MaxInFlightPerHost)

	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&rep)
	}
	printDemo(e.stdout, &rep)
	return nil
}

func printDemo(w io.Writer, r *demoReport) {
	s := r.Crawl
	secs := s.Elapsed.Seconds()
	fmt.Fprintf(w, "crawled %d hosts of a %d-host test web in %.2fs, depth limit reached after %d levels\n\n",
		s.Hosts, r.Web.Hosts, secs, s.Levels)
	row := func(k string, v any) { fmt.Fprintf(w, "  %-28s %v\n", k, v) }
	row("pages fetched", fmt.Sprintf("%d (%.0f pages/s)", s.Fetched, float64(s.Fetched)/max(secs, 1e-9)))
	row("bytes received", fmt.Sprintf("%.1f MB (%.1f MB/s)", float64(s.Bytes)/1e6, float64(s.Bytes)/1e6/max(secs, 1e-9)))
	row("pages stored (durable)", s.Stored)
	row("HTML pages parsed", s.HTML)
	row("links extracted", s.Links)
	row("URLs in the URL tree", s.URLs)
	row("denied by robots.txt", s.RobotsDenied)
	row("beyond the depth limit", s.TooDeep)
	row("pages marked nofollow", s.NoFollow)
	row("bodies cut at the size cap", s.Truncated)
	row("bodies ended early (kept)", s.ShortBodies)
	row("HTTP statuses", sortedCounts(s.Statuses))
	row("failed fetches", sortedCounts(s.Errors))
	row("refused by scope/trap filters", sortedCounts(s.Rejected))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "against the web's ground truth (polite crawl to depth %d, traps and dead names aside):\n", s.Levels-1)
	row("crawlable URLs", r.Crawlable)
	row("crawlable but not fetched", r.Missing)
	row("fetched but not listed", r.Extra)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "the web's politeness audit of the crawl:")
	row("requests", r.Audit.Requests)
	row("duplicate fetches", r.Audit.DuplicateFetches)
	row("robots-forbidden requests", r.Audit.Forbidden)
	row("max connections per host", r.Audit.MaxConnsPerHost)
}

// sortedCounts formats a count map as "k=v k=v" in key order.
func sortedCounts[K int | string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v=%d", k, m[k])
	}
	return b.String()
}
