package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/tools/stats"
)

// runRun crawls as one node from a config file.
func runRun(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "run", "run --config FILE [--seeds URL,URL...] [--dir DIR] [--status ADDR] [--node ID] [--quiet] [--verbose]",
		`Crawls as one node, as the config file says (write one with 'kspider init'),
until nothing within the limits is left to fetch (exit 0). Ctrl-C or SIGTERM
stops handing out work, stores every page fetched, syncs the data directory
and exits 1 saying the crawl was interrupted; a second one quits at once
(as kill -9 would: what is stored stays stored, pages in flight are fetched
again). Running the same command again continues where it stopped. Two
runs on one data directory are refused.

A progress line goes to stderr every second (--quiet: none), then a summary.
The node's own lines go there too: damage found in its files and what was
done about it, a resume after a crash, the cluster's state; each URL's
trouble only with --verbose.
The status page (--status; a cluster node's status in its cluster.nodes
entry; else the config key status, default 127.0.0.1:7411) serves
a dashboard at /, JSON at /status, Prometheus metrics at /metrics and control
('kspider ctl'; the token is in DATA_DIR/STATUS_TOKEN, readable by its owner only).
After 'kspider ctl drain' the lists out finish and the run exits 0; running
the same command again continues.
limits.max_pages counts the pages of every run on the data directory (a
cluster node its share, 1/N); at it the crawl ends (exit 0) and a larger
limit continues it.
With a [cluster] block of several nodes this process is one node of the
cluster (--node, or the node whose udp address is local; README "Running a
cluster"); it exits 0 when the whole cluster's crawl is over, and 3 when it
is over but short of the web (a peer lost its data directory, or URLs from
a peer were lost): the summary names what.`)
	config := fs.String("config", "", "config `FILE` (TOML)")
	seeds := fs.String("seeds", "", "seed `URLs`, replacing the config's: a list split at each comma that starts another http(s) URL (a comma within a URL stays in it; a URL holding \",http://\" goes in the config's seeds or seeds_file)")
	dir := fs.String("dir", "", "data `DIR`ectory, replacing the config's data_dir")
	quiet := fs.Bool("quiet", false, "no progress line")
	verbose := fs.Bool("verbose", false, "also log each URL's trouble (a fetch failed, a link refused, a robots.txt unreachable) to stderr")
	caFile := fs.String("ca", "", "extra trusted CA certificates, PEM `FILE` (a test web's)")
	statusAddr := fs.String("status", "", "status page `ADDR`ess (host:port; \"off\": none), replacing the config's status")
	nodeFlag := fs.Int("node", -1, "this node's `ID` in cluster.nodes (default: the node whose udp address is local, else cluster.node)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE`")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		// "kspider run: open /x/cpu.prof: ..." named no flag.
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	defer stopProfile()
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	var badFlag error
	fs.Visit(func(f *flag.Flag) {
		switch {
		case badFlag != nil:
		case f.Name == "node" && *nodeFlag < 0:
			// The default, -1, is "not given"; a negative one given was
			// taken for none, and the process ran as the config's
			// cluster.node.
			badFlag = usagef("--node %d: node ids are 0 or more", *nodeFlag)
		}
	})
	if badFlag != nil {
		return badFlag
	}
	if *config == "" {
		return usagef("--config FILE is required (write one with 'kspider init > crawl.toml')")
	}
	cfg, err := spider.LoadRunConfig(ctx, *config)
	if ctx.Err() != nil && errors.Is(err, context.Cause(ctx)) {
		return err // interrupted: not an error of the config
	}
	if err != nil {
		printErrors(e, err)
		return fmt.Errorf("%s is not a valid config", *config)
	}
	if *seeds != "" {
		cfg.Seeds, cfg.SeedsFile = splitSeeds(*seeds), ""
		if err := spider.CheckSeeds(cfg.Seeds); err != nil {
			return usagef("--seeds: %v", err)
		}
	}
	switch *statusAddr {
	case "": // not given
	case "off":
		cfg.Status = ""
	default:
		// Checked here, not left to the listen: a bad address would only be
		// warned about and the crawl run on without its page or control.
		if err := spider.CheckStatusAddr(*statusAddr); err != nil {
			return usagef("--status: %v (or \"off\")", err)
		}
		cfg.Status = *statusAddr
	}
	if *dir != "" {
		cfg.DataDir = *dir
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	seedList, err := cfg.LoadSeeds(ctx)
	if err != nil {
		return err
	}
	if err := spider.CheckSeeds(seedList); err != nil {
		return fmt.Errorf("seeds: %v", err)
	}
	var extra []*x509.Certificate
	if *caFile != "" {
		if extra, err = readCAFile(*caFile); err != nil {
			return fmt.Errorf("--ca: %w", err)
		}
	}
	rc, err := setupCluster(ctx, e, cfg, *nodeFlag)
	if err != nil {
		return err
	}
	if rc != nil {
		// The node's endpoint closes it; this is for a return before.
		defer rc.node.Comm.Conn.Close()
	}
	if rc != nil && rc.status != "" && *statusAddr == "" {
		// The node list says where each node's page is: every node may
		// run from one config file.
		cfg.Status = rc.status
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	for _, w := range spider.CheckLimits(cfg.Fetchers, cfg.Limits.MaxBody) {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	// One node, one phase: the active phase is always 0 and no slot
	// boundary needs agreeing on, so the node needs no NTP.
	if rc == nil {
		fmt.Fprintln(e.stderr, "one node, one phase: the phase clock is the system clock as is (no NTP needed)")
	}

	res, err := resolver.New(resolver.Config{Servers: cfg.DNSServers})
	if err != nil {
		return fmt.Errorf("DNS resolver: %w", err)
	}
	defer res.Close()
	if err := probeDNS(ctx, res, cfg.DNSServers, seedList); err != nil {
		return err
	}
	sc := cfg.ScopeConfig()
	ncfg := spider.NodeConfig{
		Dir: cfg.DataDir, StorageDirs: cfg.StorageDirs(), Codec: cfg.Storage.Codec, Seeds: seedList,
		UserAgent: cfg.UserAgentHeader(), MaxDepth: cfg.Limits.MaxDepth, MaxLinks: cfg.Limits.MaxLinksPerPage, Scope: &sc,
		MaxPages: cfg.Limits.MaxPages, RobotsStaleFor: cfg.RobotsStaleFor(),
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
		Collector: collector.Config{From: cfg.From, ExtraCAs: extra, Fetchers: cfg.Fetchers, Pipeline: cfg.Pipelining,
			ConnectTimeout: cfg.Limits.ConnectTimeout.Duration, TLSTimeout: cfg.Limits.TLSTimeout.Duration,
			FirstByte: cfg.Limits.FirstByteTimeout.Duration, ResponseTimeout: cfg.Limits.ResponseTimeout.Duration,
			IdleRead: cfg.Limits.IdleTimeout.Duration, MaxBody: cfg.Limits.MaxBody},
		Scheduler: scheduler.Config{Phases: 1, MinDelay: cfg.Politeness.Delay.Duration,
			MaxCrawlDelay: cfg.Politeness.CrawlDelayCap.Duration, MaxHostsPerIP: cfg.Politeness.PerIP},
		DNSStats: res.Stats,
	}
	terminal := !*quiet && stats.IsTerminal(e.stderr)
	e.stderr = &lockedWriter{w: e.stderr}
	logPrefix := ""
	if rc != nil {
		logPrefix = rc.logPrefix
	}
	ncfg.Logf, ncfg.URLLogf = nodeLogs(e.stderr, logPrefix, *verbose, terminal)
	if rc != nil {
		ncfg.Cluster = rc.node
		ncfg.Scheduler.Clock, ncfg.Scheduler.Phases = rc.clock, rc.phases
		ncfg.ClockStatus = rc.clockStatus
	}
	node, err := spider.OpenNode(ncfg)
	if err != nil {
		return err
	}
	status, err := startStatus(ctx, e.stderr, node, cfg.Status, cfg.DataDir)
	if err != nil { // the crawl goes on without its page
		fmt.Fprintf(e.stderr, "warning: %v\n", err)
	}
	defer status.Close()
	prog := &spider.Progress{W: e.stderr, Snapshot: node.Counters, Terminal: terminal}
	progCtx, stopProg := context.WithCancel(ctx)
	progDone := make(chan struct{})
	if !*quiet {
		go func() {
			defer close(progDone)
			prog.Run(progCtx)
		}()
	} else {
		close(progDone)
	}
	start := time.Now()
	sum, runErr := node.Run(ctx)
	status.Close() // before node.Close: no request may read a closed node
	stopProg()
	<-progDone
	counters := node.Counters()
	closeErr := node.Close()
	// Close's sync makes the last pages durable: the counts are final now.
	counters.Pages, counters.Bytes = node.Durable(), node.DurableBytes()
	interrupted := errors.Is(runErr, spider.ErrInterrupted)
	// Drained on request: exit 0, after the whole summary (it ended at the
	// first line, leaving out the counts, the damaged records found and
	// the cluster's lines, such as the URLs waiting for a peer down).
	drained := errors.Is(runErr, spider.ErrDrained) && closeErr == nil
	how := spider.RunFinished
	switch {
	case drained:
		how = spider.RunDrained
	case runErr != nil && !interrupted || closeErr != nil:
		// A fatal error: "interrupted (run again …)" told the operator
		// all was well and the same command would go on.
		how = spider.RunFailed
	case interrupted:
		how = spider.RunInterrupted
	}
	// Pages handed to a store that then failed were not all made
	// durable: say what the store holds, not what it was given.
	var lost uint64
	if sum != nil && node.Durable() < sum.Stored {
		lost = sum.Stored - node.Durable()
		sum.Stored, sum.Bytes = node.Durable(), node.DurableBytes()
	}
	fmt.Fprintln(e.stderr, spider.SummaryLine(counters, time.Since(start), how))
	if sum != nil {
		fmt.Fprintln(e.stderr, countsLine(sum))
		if sum.Unreadable > 0 {
			fmt.Fprintf(e.stderr, "%d stored pages could not be read back to follow their links again (damaged records): run 'kspider check' on the data directory\n", sum.Unreadable)
		}
		if lost > 0 {
			fmt.Fprintf(e.stderr, "%d more pages fetched were lost with the page store before they were on disk; the next run fetches them again\n", lost)
		}
		if sum.LimitReached && rc != nil && rc.node.Config.N() > 1 {
			fmt.Fprintf(e.stderr, "limits.max_pages (%d) reached: this node's share (%d, 1/%d of it); the URLs left wait; raise it and run again to continue\n",
				cfg.Limits.MaxPages, spider.NodeShare(cfg.Limits.MaxPages, rc.node.Config.N()), rc.node.Config.N())
		} else if sum.LimitReached {
			fmt.Fprintf(e.stderr, "limits.max_pages (%d) reached: the URLs left wait; raise it and run again to continue\n", cfg.Limits.MaxPages)
		}
	}
	if rc != nil {
		fmt.Fprintln(e.stderr, rc.summary(node))
	}
	if drained {
		fmt.Fprintln(e.stderr, "drained: every list out finished, every page fetched is stored and synced; run the same command again to continue")
		return nil
	}
	if err := errors.Join(runErr, unseen(runErr, closeErr)); err != nil {
		if interrupted && closeErr == nil {
			return errors.New("interrupted: every page fetched is stored; run the same command again to continue")
		}
		return err
	}
	if rc != nil {
		return rc.lostShares(node)
	}
	return nil
}

// splitSeeds splits a --seeds list at each comma that a next http(s) URL
// follows (spaces after the comma allowed). Every comma split the list,
// so a seed holding one (a path "/a,b", a query "?ids=1,2") could not be
// given: its pieces were refused as not URLs, or crawled as other URLs.
// A URL holding "," and then "http://" (a query "?to=x,http://b/") cannot
// be told from two seeds; it is given in the config's seeds or
// seeds_file instead (a second flag taking one URL each would be a second
// way to give seeds on the command line).
func splitSeeds(list string) []string {
	var out []string
	start := 0
	for i := 0; i < len(list); i++ {
		if list[i] != ',' {
			continue
		}
		next := strings.TrimLeft(list[i+1:], " \t")
		if hasPrefixFold(next, "http://") || hasPrefixFold(next, "https://") {
			out = append(out, list[start:i])
			start = len(list) - len(next)
			i = start - 1
		}
	}
	return append(out, list[start:])
}

// hasPrefixFold is strings.HasPrefix ignoring case, looking at no more of
// s than prefix's length.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// unseen is what of closeErr seen does not already say: a failed store's
// Close returns the very error that stopped the run, and the operator read
// it twice at the end.
func unseen(seen, closeErr error) error {
	if closeErr == nil || seen == nil {
		return closeErr
	}
	j, ok := closeErr.(interface{ Unwrap() []error })
	if !ok {
		if errors.Is(seen, closeErr) {
			return nil
		}
		return closeErr
	}
	var out []error
	for _, e := range j.Unwrap() {
		if !errors.Is(seen, e) {
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

// countsLine is the run's counts as its summary prints them. The URLs
// robots.txt was too costly to check are among the denied, said apart:
// left out, an operator could not tell them from those robots.txt
// forbids. The robots.txt fetches abandoned (their list ended first) are
// said too: counted only, an operator whose slots were too short for a
// slow robots.txt saw hosts wait and no reason. The crawl bench reads the
// line (urlsOfRun).
func countsLine(sum *spider.NodeSummary) string {
	return fmt.Sprintf("fetched %d, stored %d, errors %d, robots denied %d (%d too costly to check), too deep %d, rejected %d, robots.txt fetches abandoned %d, URLs %d",
		sum.Fetched, sum.Stored, sum.Errors, sum.Denied, sum.DeniedOverBudget, sum.TooDeep, sum.Rejected, sum.RobotsAbandoned, sum.URLs)
}
