package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
	"github.com/kspider/kspider/tools/testweb"
)

// demoReport is what `kspider demo --json` prints.
type demoReport struct {
	Web struct {
		Hosts int    `json:"hosts"`
		Seed  int64  `json:"seed"`
		Plain bool   `json:"plain"`
		HTTP  string `json:"http"`
		DNS   string `json:"dns"`
	} `json:"web"`
	Depth       int                 `json:"depth"`
	Dir         string              `json:"dir,omitempty"` // when kept (--dir)
	Crawl       *spider.NodeSummary `json:"crawl"`         // this run
	Interrupted bool                `json:"interrupted"`
	Store       struct {
		Pages    int         `json:"pages"`        // every run's
		Earlier  int         `json:"earlier_runs"` // stored before this run
		Twice    int         `json:"stored_twice"` // URLs stored more than once
		Hosts    int         `json:"hosts"`        // origins with a page stored
		Statuses map[int]int `json:"statuses"`     // stored pages by status
		Bytes    int64       `json:"body_bytes"`   // stored bodies, as received
	} `json:"store"`
	Crawlable int `json:"truth_crawlable"` // what the web's ground truth says a polite crawler reaches
	Missing   int `json:"truth_missing"`   // crawlable URLs not stored
	Extra     int `json:"truth_extra"`     // stored URLs the truth does not list
	Audit     struct {
		Requests         int `json:"requests"`
		DuplicateFetches int `json:"duplicate_fetches"` // repeats of a request already answered
		Retries          int `json:"retries"`           // repeats after a failed answer (5xx, cut body)
		Forbidden        int `json:"forbidden"`
		MaxConnsPerHost  int `json:"max_conns_per_host"`
	} `json:"audit"`
}

// demoState is DIR/demo.json: the web a kept demo directory was crawled
// on, so that running the demo again on it serves the same web on the same
// ports (the ports are part of every URL) and continues the crawl.
type demoState struct {
	Version   int   `json:"version"` // 1
	Hosts     int   `json:"hosts"`
	Seed      int64 `json:"seed"`
	Plain     bool  `json:"plain"`
	HTTPPort  int   `json:"http_port"`
	HTTPSPort int   `json:"https_port"`
}

const demoStateFile = "demo.json"

func runDemo(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "demo", "demo [--hosts N] [--seed S] [--depth D] [--plain] [--dir DIR] [--status ADDR] [--json]", `
Starts a generated test web on loopback (its own HTTP, HTTPS and DNS servers,
with hostile hosts unless --plain), crawls it from its seed URLs to the end of
the depth limit with one node (the same node as 'kspider run'), and prints a
summary: what was fetched and stored, how the store compares with the web's
ground truth, and the web's politeness audit of the crawl. Nothing leaves
this machine.

With --dir the node's state is kept; running the demo again on the same
directory serves the same web on the same ports and continues the crawl
(after Ctrl-C, a kill, or to the end: then there is nothing left to fetch).
Ctrl-C stops the crawl, keeps every page fetched and exits 1.

The node's status page (dashboard, /status JSON, /metrics, control with
'kspider ctl') listens on --status while the demo runs; 'kspider ctl drain'
ends the crawl as Ctrl-C does, but with exit 0.`)
	hosts := fs.Int("hosts", 300, "hosts in the test web")
	seed := fs.Int64("seed", 1, "seed of the test web (same seed, same web)")
	depth := fs.Int("depth", 4, "link depth limit (0: the seeds only)")
	workers := fs.Int("workers", 64, "hosts fetched at once")
	plain := fs.Bool("plain", false, "a well-behaved web: no hostile hosts, DNS failures or spam domains")
	dir := fs.String("dir", "", "keep the node's state (URL tree, pages) in DIR and continue a crawl kept there (default: a temporary directory, removed)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verbose := fs.Bool("v", false, "log every skipped URL and failed fetch to stderr")
	statusAddr := fs.String("status", "127.0.0.1:7411", "status page `ADDR`ess (ip:port; \"off\": none); busy: a warning, the demo goes on")
	logFile := fs.String("log", "", "also write the test web's request log of this run to FILE (JSON lines; see testweb audit)")
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
	if *workers < 1 || *workers > 4096 {
		return usagef("--workers %d: want 1 to 4096", *workers)
	}
	if *statusAddr != "off" && *statusAddr != "" {
		// As run checks it: at the listen a bad address was only warned
		// about, and the demo ran on without its page.
		if err := spider.CheckStatusAddr(*statusAddr); err != nil {
			return usagef("--status: %v (or \"off\")", err)
		}
	}
	var logOut *os.File
	if *logFile != "" {
		// Made now: a path that cannot be written was found out after the
		// whole crawl, whose summary was then lost.
		f, err := os.Create(*logFile)
		if err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		defer f.Close()
		logOut = f
	}
	st := demoState{Version: 1, Hosts: *hosts, Seed: *seed, Plain: *plain}
	stateDir := *dir
	if stateDir == "" {
		tmp, err := os.MkdirTemp("", "kspider-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		stateDir = tmp
	} else {
		kept, err := readDemoState(stateDir)
		if err != nil {
			return err
		}
		if kept != nil {
			if err := sameWeb(fs, &st, kept, stateDir); err != nil {
				return err
			}
			st = *kept
		}
	}

	progress := func(format string, a ...any) {
		if !*asJSON {
			fmt.Fprintf(e.stderr, format+"\n", a...)
		}
	}
	progress("generating a test web of %d hosts (seed %d) ...", st.Hosts, st.Seed)
	web := testweb.Generate(testweb.Config{Hosts: st.Hosts, Seed: st.Seed, Plain: st.Plain})
	var log bytes.Buffer
	// The web outlives a Ctrl-C: the node finishes its lists against it.
	webCtx, stopWeb := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWeb()
	srv, err := testweb.Start(webCtx, web, testweb.ServeConfig{
		HTTPAddr: "127.0.0.1:" + strconv.Itoa(st.HTTPPort), HTTPSAddr: "127.0.0.1:" + strconv.Itoa(st.HTTPSPort),
		DNSAddr: "127.0.0.1:0", Log: &log,
		// Hostile hosts misbehave briefly so the demo ends in seconds.
		SlowDelay: 300 * time.Millisecond, StallFor: time.Second, EndlessFor: 2 * time.Second,
		EndlessBytes: 16 << 20, BombSize: 64 << 20,
	})
	if err != nil {
		if st.HTTPPort != 0 {
			return fmt.Errorf("starting the test web of %s on its ports %d and %d again: %w", stateDir, st.HTTPPort, st.HTTPSPort, err)
		}
		return fmt.Errorf("starting the test web: %w", err)
	}
	defer srv.Close()
	if *dir != "" && st.HTTPPort == 0 {
		st.HTTPPort, st.HTTPSPort = srv.Ports().HTTP, srv.Ports().HTTPS
		if err := writeDemoState(stateDir, &st); err != nil {
			return err
		}
	}
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 500 * time.Millisecond, Network: "ip4",
		// The web's one DNS server times out on purpose for its dead
		// names; marked down for the default 10 s it would fail every name.
		DownFor: 100 * time.Millisecond, ServFailTTL: 100 * time.Millisecond})
	if err != nil {
		return err
	}
	defer res.Close()

	var rep demoReport
	rep.Web.Hosts, rep.Web.Seed, rep.Web.Plain, rep.Web.HTTP, rep.Web.DNS = st.Hosts, st.Seed, st.Plain, srv.HTTPAddr(), srv.DNSAddr()
	rep.Depth, rep.Dir = *depth, *dir
	terminal := !*asJSON && stats.IsTerminal(e.stderr)
	e.stderr = &lockedWriter{w: e.stderr}
	// The node's own lines (a resume after a kill, damage found in --dir)
	// always; each URL's, and the audit's, with -v.
	nodeLogf, logf := nodeLogs(e.stderr, "", *verbose, terminal)
	node, err := spider.OpenNode(spider.NodeConfig{
		Dir: stateDir, Seeds: srv.SeedURLs(), MaxDepth: *depth, RootCAs: srv.CertPool(), Logf: nodeLogf, URLLogf: logf,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
		Collector: collector.Config{Fetchers: *workers, ConnectTimeout: 3 * time.Second, TLSTimeout: 3 * time.Second,
			FirstByte: 3 * time.Second, ResponseTimeout: 5 * time.Second, IdleRead: 2 * time.Second, MaxBody: 2 << 20},
		// Hostile hosts answer 503 with long Retry-After values and fail
		// over and over: short waits, few retries, so the demo ends soon.
		Scheduler: scheduler.Config{PartialWait: 20 * time.Millisecond, ListLen: 100, ErrorDelay: 200 * time.Millisecond,
			MaxBackoff: 2 * time.Second, MaxRetryAfter: time.Second, MaxRetries: 3},
	})
	if err != nil {
		return err
	}
	progress("test web on http://%s (DNS %s); crawling to depth %d with one node in %s ...", srv.HTTPAddr(), srv.DNSAddr(), *depth, stateDir)
	status, err := startStatus(ctx, e.stderr, node, *statusAddr, stateDir)
	if err != nil { // the demo goes on without its page
		fmt.Fprintf(e.stderr, "warning: %v\n", err)
	}
	progCtx, stopProg := context.WithCancel(ctx)
	progDone := make(chan struct{})
	if !*asJSON {
		prog := &spider.Progress{W: e.stderr, Snapshot: node.Counters, Terminal: terminal}
		go func() {
			defer close(progDone)
			prog.Run(progCtx)
		}()
	} else {
		close(progDone)
	}
	sum, runErr := node.Run(ctx)
	stopProg()
	<-progDone
	status.Close() // before the node closes: nothing reads it after
	drained := errors.Is(runErr, spider.ErrDrained)
	interrupted := errors.Is(runErr, spider.ErrInterrupted) || drained
	if closeErr := node.Close(); closeErr != nil || runErr != nil && !interrupted {
		return errors.Join(runErr, unseen(runErr, closeErr))
	}
	rep.Crawl, rep.Interrupted = sum, interrupted

	// What the store holds, from every run on this directory.
	storedURLs, err := demoStore(&rep, filepath.Join(stateDir, "pages"), sum)
	if err != nil {
		return err
	}
	truth := map[string]bool{} // URL -> must be stored
	for _, d := range srv.Truth().Crawlable(robots.ProductToken(spider.DefaultUserAgent), *depth, 0) {
		if c, err := urlnorm.Canonical(nil, d.URL, nil); err == nil {
			// Dead names cannot be fetched, and the scope filters cut
			// traps short on purpose: those may go either way.
			truth[c] = d.Kind != "dns-failure" && d.Kind != "trap"
		}
	}
	for u, must := range truth {
		if !must {
			continue
		}
		rep.Crawlable++
		if !storedURLs[u] {
			rep.Missing++
			logf("crawlable but not stored: %s", u)
		}
	}
	for u := range storedURLs {
		if _, listed := truth[u]; !listed {
			rep.Extra++
			logf("stored but not in the truth: %s", u)
		}
	}
	if err := demoAudit(&rep, srv, &log, logOut, logf); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(&rep); err != nil {
			return err
		}
	} else {
		// The summary's write error is checked: it was lost, with exit 0.
		w := bufio.NewWriter(e.stdout)
		printDemo(w, &rep)
		if err := w.Flush(); err != nil {
			return fmt.Errorf("writing the summary: %w", err)
		}
	}
	if rep.Interrupted && !drained {
		if *dir == "" {
			return errors.New("interrupted (the crawl's temporary directory is removed; with --dir DIR it is kept and can be continued)")
		}
		return fmt.Errorf("interrupted: every page fetched is stored in %s; run 'kspider demo --dir %s' again to continue", *dir, *dir)
	}
	return nil
}

// readDemoState reads DIR/demo.json: nil when DIR holds no crawl yet, an
// error when it holds a crawl that is not a demo's.
func readDemoState(dir string) (*demoState, error) {
	b, err := os.ReadFile(filepath.Join(dir, demoStateFile))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "urls")); err == nil {
			return nil, fmt.Errorf("%s holds a crawl that is not a demo's (no %s): use 'kspider run' on it, or another --dir", dir, demoStateFile)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st demoState
	if err := json.Unmarshal(b, &st); err != nil || st.Version != 1 || st.Hosts < 1 ||
		st.HTTPPort <= 0 || st.HTTPPort > 65535 || st.HTTPSPort <= 0 || st.HTTPSPort > 65535 {
		return nil, fmt.Errorf("%s: not a demo state file (version 1 with hosts and ports): %q", filepath.Join(dir, demoStateFile), b)
	}
	return &st, nil
}

// sameWeb checks the web flags given against the kept web's.
func sameWeb(fs *flag.FlagSet, want, kept *demoState, dir string) error {
	var diff []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "hosts" && want.Hosts != kept.Hosts,
			f.Name == "seed" && want.Seed != kept.Seed,
			f.Name == "plain" && want.Plain != kept.Plain:
			diff = append(diff, "--"+f.Name)
		}
	})
	if len(diff) > 0 {
		return usagef("%s holds a crawl of another web (%d hosts, seed %d, plain %v): drop %s or use another --dir",
			dir, kept.Hosts, kept.Seed, kept.Plain, strings.Join(diff, ", "))
	}
	return nil
}

func writeDemoState(dir string, st *demoState) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(st)
	tmp := filepath.Join(dir, demoStateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, demoStateFile))
}

// demoStore scans the page store and returns the set of URLs stored.
func demoStore(rep *demoReport, pages string, sum *spider.NodeSummary) (map[string]bool, error) {
	got := map[string]bool{}
	rep.Store.Statuses = map[int]int{}
	r, err := storage.OpenReader([]string{pages})
	if err != nil {
		return nil, fmt.Errorf("reading the pages back: %w", err)
	}
	defer r.Close()
	origins := map[string]bool{}
	err = r.Scan(context.Background(), func(p *storage.Page) error {
		if got[p.URL] {
			rep.Store.Twice++
		}
		got[p.URL] = true
		rep.Store.Pages++
		rep.Store.Statuses[p.Status]++
		rep.Store.Bytes += int64(len(p.Body))
		origins[robots.OriginOf(p.URL)] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the pages back: %w", err)
	}
	rep.Store.Hosts = len(origins)
	if sum != nil {
		rep.Store.Earlier = rep.Store.Pages - int(sum.Stored)
	}
	return got, nil
}

// demoAudit reads the web's request log of this run.
// A copy goes to logOut (--log) when it is not nil.
func demoAudit(rep *demoReport, srv *testweb.Server, log *bytes.Buffer, logOut *os.File, logf func(string, ...any)) error {
	// Closing the web flushes its log and stops its writer.
	if err := srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	if logOut != nil {
		_, err := logOut.Write(log.Bytes())
		if err = errors.Join(err, logOut.Close()); err != nil {
			return fmt.Errorf("--log: %w", err)
		}
	}
	entries, err := testweb.ReadLog(bytes.NewReader(log.Bytes()))
	if err != nil {
		return err
	}
	audit := testweb.AuditEntries(entries, testweb.AuditOptions{})
	dups, dupList := testweb.Refetches(entries, 10)
	for _, d := range dupList {
		logf("fetched %d times: %s", d.Count, d.URL)
	}
	rep.Audit.Requests, rep.Audit.DuplicateFetches = audit.Requests, dups
	rep.Audit.Retries = audit.DuplicateFetches - dups
	rep.Audit.Forbidden, rep.Audit.MaxConnsPerHost = audit.Forbidden, audit.MaxConnsPerHost
	logf("audit: max connections per host %d (%s), max requests in flight per host %d", audit.MaxConnsPerHost, audit.MaxConnsHost, audit.MaxInFlightPerHost)
	return nil
}

func printDemo(w io.Writer, r *demoReport) {
	s := r.Crawl
	secs := s.Elapsed.Seconds()
	how := "to the end"
	if r.Interrupted {
		how = "INTERRUPTED"
	}
	fmt.Fprintf(w, "crawled a %d-host test web to depth %d in %.2fs: %s\n\n", r.Web.Hosts, r.Depth, secs, how)
	row := func(k string, v any) { fmt.Fprintf(w, "  %-30s %v\n", k, v) }
	fmt.Fprintln(w, "this run:")
	row("responses fetched", fmt.Sprintf("%d (%.0f pages/s)", s.Fetched, float64(s.Fetched)/max(secs, 1e-9)))
	row("pages stored", fmt.Sprintf("%d (%.1f MB, %.1f MB/s)", s.Stored, float64(s.Bytes)/1e6, float64(s.Bytes)/1e6/max(secs, 1e-9)))
	row("failed fetches", s.Errors)
	row("denied by robots.txt", s.Denied)
	row("links beyond the depth limit", s.TooDeep)
	row("links refused by scope/traps", s.Rejected)
	row("new URLs", s.Admitted)
	row("URLs in the URL tree", s.URLs)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "the page store (every run on this directory):")
	row("pages stored", fmt.Sprintf("%d (%d by earlier runs)", r.Store.Pages, r.Store.Earlier))
	row("hosts with pages", r.Store.Hosts)
	row("HTTP statuses", sortedCounts(r.Store.Statuses))
	row("URLs stored twice", r.Store.Twice)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "against the web's ground truth (polite crawl to depth %d, traps and dead names aside):\n", r.Depth)
	row("crawlable URLs", r.Crawlable)
	row("crawlable but not stored", r.Missing)
	row("stored but not listed", r.Extra)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "the web's politeness audit of this run:")
	row("requests", r.Audit.Requests)
	row("duplicate fetches", r.Audit.DuplicateFetches)
	row("retries after a failed answer", r.Audit.Retries)
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
