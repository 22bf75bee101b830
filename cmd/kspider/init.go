package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/storage"
)

// runInit prints an annotated sample config, or checks one.
func runInit(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "init", "init [--check FILE]",
		`Prints an annotated sample config for 'kspider run' on stdout: every key
with its default value and what it means. Save it, put your seeds and
contact URL in, and check it:

  kspider init > crawl.toml
  kspider init --check crawl.toml

--check reads FILE (and its seeds_file, and a cluster's secret_file as the
run does), prints every error naming the line and key and exits 1, or
prints "ok", the warnings (on stderr; these include this machine's
open-files hard limit and local port range when they are too small for the
fetchers) and the effective values (defaults filled in) and exits 0.`)
	check := fs.String("check", "", "check config `FILE` instead of printing the sample")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *check == "" {
		sample, err := sampleConfig()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(sample)
		return err
	}
	return checkConfig(ctx, e, *check)
}

// checkConfig prints what is wrong with the config at path, or its
// effective values.
func checkConfig(ctx context.Context, e env, path string) error {
	cfg, err := spider.LoadRunConfig(ctx, path)
	var seeds []string
	if err == nil {
		seeds, err = cfg.LoadSeeds(ctx)
	}
	if err == nil && cfg.IsCluster() && cfg.Cluster.SecretFile != "" {
		// As the run reads it: else "ok" of a secret the run refuses
		// (others may read it, too short, missing).
		_, err = cluster.ReadSecret(cfg.Cluster.SecretFile)
	}
	if ctx.Err() != nil && errors.Is(err, context.Cause(ctx)) {
		return err // interrupted: not an error of the config
	}
	if err != nil {
		if n := printErrors(e, err); n != 1 {
			return fmt.Errorf("%s is not a valid config (%d errors)", path, n)
		}
		return fmt.Errorf("%s is not a valid config (1 error)", path)
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", path)
	warnings := cfg.Warnings()
	// kspider run raises the open-files limit to the hard one: judge that.
	if _, hard, err := spider.OpenFilesLimit(); err == nil {
		warnings = append(warnings, spider.LimitWarnings(cfg.Fetchers, hard, spider.PortRangeFile)...)
	}
	warnings = append(warnings, spider.MemoryWarnings(cfg.Fetchers, cfg.Limits.MaxBody, "/")...)
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(e.stdout, "# %d seeds (%d inline", len(seeds), len(cfg.Seeds))
	if cfg.SeedsFile != "" {
		fmt.Fprintf(e.stdout, ", %d from %s", len(seeds)-len(cfg.Seeds), cfg.SeedsFile)
	}
	fmt.Fprintf(e.stdout, "); User-Agent: %s; pages in %s\n", cfg.UserAgentHeader(), strings.Join(cfg.StorageDirs(), ", "))
	out, err := toml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("printing the effective config: %w", err)
	}
	_, err = e.stdout.Write(out)
	return err
}

// printErrors prints each of a joined error's errors on its own line and
// returns their number; a note that values were not checked is printed,
// not counted.
func printErrors(e env, err error) int {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	n := 0
	for _, err := range list {
		fmt.Fprintln(e.stderr, err)
		var more *spider.MoreErrors
		var notChecked *spider.ValuesNotChecked
		switch {
		case errors.As(err, &more):
			n += more.N
		case errors.As(err, &notChecked):
		default:
			n++
		}
	}
	return n
}

// sampleSeeds are the seeds the sample config shows, to be replaced.
var sampleSeeds = []string{"https://www.example.org/"}

// sampleConfig is the annotated sample, with Defaults' values.
func sampleConfig() ([]byte, error) {
	d := spider.Defaults()
	d.Seeds = sampleSeeds
	t, err := template.New("sample").Funcs(template.FuncMap{
		"q":      strconv.Quote,
		"list":   tomlList,
		"codecs": func() string { return strings.Join(storage.Codecs(), ", ") },
		"time":   func(t time.Time) string { return t.Format(time.RFC3339) },
	}).Parse(sampleTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func tomlList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

const sampleTemplate = `# kspider crawl config: 'kspider run --config FILE' reads it.
# Every key is optional; the value shown is the default (except seeds).
# Durations are strings such as "250ms", "1m30s" or "24h"; sizes are bytes.
# Relative paths are taken from the directory kspider runs in.
# Check the file with: kspider init --check FILE

# Where the crawl starts: absolute http(s) URLs, at link depth 0. Long lists
# go in seeds_file, one URL a line ('#' starts a comment line). Both are read.
seeds = {{list .Seeds}}
seeds_file = {{q .SeedsFile}}

# The node's state: URL tree, scheduler tables, the lock file (one process
# per directory), and the pages unless [storage] dirs says otherwise.
data_dir = {{q .DataDir}}

# Host lists fetched at once, each over its own connection.
fetchers = {{.Fetchers}}
# HTTP/1.1 requests in flight on one connection; 1 is off. Used only on
# hosts whose first answer shows they keep connections alive.
pipelining = {{.Pipelining}}

# Who you are. The User-Agent header is user_agent followed by
# " (+contact)"; site owners use the contact URL (http(s) or mailto) to
# reach you, so put your own. from, when set, is sent as the From header.
user_agent = {{q .UserAgent}}
contact = {{q .Contact}}
from = {{q .From}}

# DNS servers ("ip" or "ip:port") asked by kspider's own resolver; none:
# those of /etc/resolv.conf.
dns_servers = {{list .DNSServers}}
# NTP servers ("host" or "host:port") that keep the nodes' phase clocks
# together; none: the system clock is trusted as is (fine for one node).
ntp_servers = {{list .NTPServers}}

# The status page's listen address ("" for none). Anything but a loopback
# address lets whoever reaches it watch and control the crawl.
status = {{q .Status}}

[storage]
# Page store directories, one per disk; pages are spread over them. None:
# data_dir/pages.
dirs = {{list .Storage.Dirs}}
# Compression of stored bodies: one of {{codecs}}.
codec = {{q .Storage.Codec}}

[scope]
# Which URLs belong to the crawl. include and exclude are Go regular
# expressions on the whole URL: if include has any, one must match; none of
# exclude may. domains are rules such as "ac.th" (that domain and its
# subdomains), "-cs.ku.ac.th" (not that one); see spider/scope.
include = {{list .Scope.Include}}
exclude = {{list .Scope.Exclude}}
domains = {{list .Scope.Domains}}
# Trap limits (0: no limit): URL length in bytes, path segments, repeats of
# one segment in a path (a loop: a path with one segment this many times is
# refused, so at least 2), hosts per registrable domain.
max_url_length = {{.Scope.MaxURLLength}}
max_path_depth = {{.Scope.MaxPathDepth}}
max_segment_repeat = {{.Scope.MaxSegmentRepeat}}
max_subdomains = {{.Scope.MaxSubdomains}}
# Refuse every URL with a query string; refuse paths ending in .cgi or
# under /cgi-bin/.
reject_query = {{.Scope.RejectQuery}}
reject_cgi = {{.Scope.RejectCGI}}

[politeness]
# Least time between the starts of two requests to one host (one
# connection per host at any time whatever this says).
delay = {{q .Politeness.Delay.String}}
# Connections this node has open at once to one IP address (hosts
# sharing a server); kept connections count. Per node in a cluster.
per_ip = {{.Politeness.PerIP}}
# A robots.txt Crawl-delay longer than the delay is obeyed up to this
# (more than 0; at or below the delay, Crawl-delay never matters).
crawl_delay_cap = {{q .Politeness.CrawlDelayCap.String}}
# When a site's robots.txt becomes unreachable, its last fetched copy is
# still used for this long after it went stale (RFC 9309 section 2.4);
# after that the site is not crawled until robots.txt answers again.
# "0s": never use a stale copy.
robots_stale_for = {{q .Politeness.RobotsStaleFor.String}}

[limits]
# Bytes of body kept per page; a longer body is cut and marked truncated.
max_body = {{.Limits.MaxBody}}
# Timeouts: TCP connect, TLS handshake, the first byte of the answer, the
# whole answer, and the longest silence while reading it.
connect_timeout = {{q .Limits.ConnectTimeout.String}}
tls_timeout = {{q .Limits.TLSTimeout.String}}
first_byte_timeout = {{q .Limits.FirstByteTimeout.String}}
response_timeout = {{q .Limits.ResponseTimeout.String}}
idle_timeout = {{q .Limits.IdleTimeout.String}}
# Link depth from the seeds (0: the seeds only; at most 253).
max_depth = {{.Limits.MaxDepth}}
# URLs admitted per host (origin), over every run (0: no limit); in a
# cluster partitioned by url, each node admits its share (1/N, rounded up).
max_pages_per_host = {{.Limits.MaxPagesPerHost}}
# Distinct links followed per page, fragments removed.
max_links_per_page = {{.Limits.MaxLinksPerPage}}
# Pages fetched over every run on data_dir before the crawl ends (0: crawl
# until nothing is left); a larger value continues a crawl that reached it.
# In a cluster it is the cluster's: each node fetches its share (1/N,
# rounded up).
max_pages = {{.Limits.MaxPages}}

# The cluster: the same block on every node but for 'node'. The default is
# one node alone. Node i works on phase (i + t) mod phases in time slot t,
# slot t = floor((now - epoch) / phase_length), so no two nodes fetch from
# one host at once.
[cluster]
# This node's id (one of the ids below).
node = {{.Cluster.Node}}
# Number of phases, at least the number of nodes.
phases = {{.Cluster.Phases}}
# One slot. No fetch starts within 200ms of either end of it, so with
# partition "url" (turns) it must be longer than 400ms (2s or more).
phase_length = {{q .Cluster.PhaseLength.String}}
# Start of slot 0, a TOML date-time (no quotes).
epoch = {{time .Cluster.Epoch}}
# File holding the secret that authenticates datagrams between nodes
# (required with more than one node; readable by kspider's user only).
secret_file = {{q .Cluster.SecretFile}}
# Which node owns a URL: a hash of the whole "url", of its "host", or of
# its registrable "domain" (fewer URLs cross between nodes).
partition = {{q .Cluster.Partition}}
{{range .Cluster.Nodes}}
# One [[cluster.nodes]] block per node: its id (0..nodes-1), the host:port
# its URL exchange listens on (UDP), and its status page's ip:port (used
# by that node instead of the top-level status key, and checked as it is;
# may be left out).
[[cluster.nodes]]
id = {{.ID}}
udp = {{q .UDP}}
status = {{q .Status}}
{{end}}`
