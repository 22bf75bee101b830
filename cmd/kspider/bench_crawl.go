package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/testweb"
)

// benchCrawlReport is what `kspider bench crawl` reports.
type benchCrawlReport struct {
	CPUs      int              `json:"cpus"`
	LoadStart [3]float64       `json:"load_start"` // /proc/loadavg before and after
	LoadEnd   [3]float64       `json:"load_end"`
	Pipeline  int              `json:"pipeline"` // kspider's requests in flight per connection (1: off)
	Measured  string           `json:"measured"` // "child processes" or "in process"
	Crawls    []benchCrawlCase `json:"crawls"`
	Notes     []string         `json:"notes,omitempty"`
}

// benchCrawlCase is one corpus crawled by kspider and, for the nginx
// corpus, by colly.
type benchCrawlCase struct {
	Corpus  string        `json:"corpus"`
	Hosts   int           `json:"hosts"`
	Rounds  int           `json:"rounds"` // crawls of each crawler; figures and ratios are their medians
	KSpider crawlFigures  `json:"kspider"`
	Colly   *crawlFigures `json:"colly,omitempty"`
	VsColly *crawlRatios  `json:"vs_colly,omitempty"`
}

// crawlFigures is what one crawl cost. CPU and peak RSS are the crawling
// process's own (wait4's rusage of the child; VmHWM, see runPeakRSS).
type crawlFigures struct {
	Pages        int64   `json:"pages"` // responses (kspider: pages stored)
	Bytes        int64   `json:"bytes"` // body bytes
	Errors       int64   `json:"errors"`
	Seconds      float64 `json:"seconds"`
	PagesPerS    float64 `json:"pages_per_s"`
	MBPerS       float64 `json:"mb_per_s"`
	CPUMsPerPage float64 `json:"cpu_ms_per_page"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	Finished     bool    `json:"finished"`
}

// crawlRatios are kspider's figures over colly's: targets pages/s >= 2,
// CPU per page <= 0.3, peak RSS <= 1.
type crawlRatios struct {
	PagesPerS  float64 `json:"pages_per_s"`
	CPUPerPage float64 `json:"cpu_per_page"`
	PeakRSS    float64 `json:"peak_rss"`
}

// crawlChildSpec is the crawl a `bench crawl --child` process runs, read as
// JSON from its stdin.
type crawlChildSpec struct {
	Dir          string        `json:"dir"`
	Seeds        []string      `json:"seeds"`
	Include      []string      `json:"include,omitempty"`
	DNS          string        `json:"dns"`
	CA           []byte        `json:"ca,omitempty"` // PEM
	MaxDepth     int           `json:"max_depth"`
	Pipeline     int           `json:"pipeline"`
	Fetchers     int           `json:"fetchers"`
	PartialWait  time.Duration `json:"partial_wait"`
	SyncInterval time.Duration `json:"sync_interval"`
	CPUProfile   string        `json:"cpuprofile,omitempty"`
	MemProfile   string        `json:"memprofile,omitempty"`
}

func benchCrawl(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench crawl", "bench crawl [--web-hosts N] [--web-pages N] [--nginx] [--colly] [--pipeline N] [--rounds N] [--cpuprofile PREFIX] [--json]",
		`Crawls to the end, with politeness delay 0 and robots.txt obeyed:
(a) a --plain test web of fixed seed and size, served by this process;
(b) the Debian documentation tools/testweb/nginx.sh serves, each package on
its own hosts and then all together, limited to the pages colly's benchmark
follows (.html and / links, no query, on the seeds' hosts).
Each kspider crawl is a node (spider.OpenNode, Run, as 'kspider run' does)
in a child process, one connection per host; the same nginx crawls are run
with colly v2.3.0 (tools/collybench, built with 'go build' into a temporary
directory, queue mode, 16 threads) in a child process too, so both sides'
CPU time (wait4's rusage) and peak RSS (VmHWM) are their own. Prints pages, pages/s,
MB/s, CPU ms per page and peak RSS of each, and kspider's over colly's
(targets: pages/s >= 2x, CPU per page <= 0.3x, peak RSS <= 1x, and >= 4,000
pages/s on the test web).`)
	webHosts := fs.Int("web-hosts", 1000, "hosts of the test web")
	webPages := fs.Int("web-pages", 400, "pages of the test web's most popular host (others follow a Zipf law)")
	webSeed := fs.Int64("web-seed", 1, "test web seed")
	useWeb := fs.Bool("testweb", true, "crawl the test web")
	useNginx := fs.Bool("nginx", true, "crawl the nginx documentation corpus (skipped when nginx, dnsmasq or the docs are missing)")
	useColly := fs.Bool("colly", true, "crawl the nginx corpus with colly too (needs the go command and tools/collybench)")
	hostsPerDoc := fs.Int("hosts-per-doc", 1, "host names per documentation package")
	only := fs.String("only", "", "crawl only the nginx packages whose label contains this (pgdocs, pydocs, javadocs)")
	pipeline := fs.Int("pipeline", 8, "kspider's HTTP/1.1 requests in flight per connection (1: off)")
	fetchers := fs.Int("fetchers", 300, "kspider's host lists fetched at once")
	rounds := fs.Int("rounds", 3, "crawls of each corpus by each crawler, alternated; the medians are printed")
	partialWait := fs.Duration("partial-wait", 20*time.Millisecond, "the scheduler's wait before a partial list goes out")
	syncInterval := fs.Duration("sync", 100*time.Millisecond, "the node's tree and scheduler sync interval")
	collyDir := fs.String("collybench", "", "the tools/collybench `DIR`ectory (default: found above the working directory)")
	kspiderBin := fs.String("kspider", "", "the kspider binary the crawl children run (default: this one)")
	inProcess := fs.Bool("in-process", false, "crawl in this process (CPU and RSS then include the test web server; for tests)")
	cpuProfile := fs.String("cpuprofile", "", "write each kspider crawl's CPU profile to `PREFIX`-<corpus>.pprof")
	memProfile := fs.String("memprofile", "", "write each kspider crawl's heap profile at its end to `PREFIX`-<corpus>.pprof, and at the peak of its live heap to PREFIX-<corpus>.pprof-peak")
	asJSON := fs.Bool("json", false, "print one JSON object")
	child := fs.Bool("child", false, "internal: run the crawl given as JSON on stdin and print its figures")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *child {
		return crawlChild(ctx, e)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *webHosts < 1 || *webPages < 1 || *hostsPerDoc < 1 || *pipeline < 1 || *fetchers < 1 || *rounds < 1 {
		return usagef("--web-hosts, --web-pages, --hosts-per-doc, --pipeline, --fetchers and --rounds must be positive")
	}
	tmp, err := os.MkdirTemp("", "kspider-bench-crawl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &crawlRunner{tmp: tmp, rounds: *rounds, inProcess: *inProcess, bin: *kspiderBin, profile: *cpuProfile, memProfile: *memProfile,
		spec: crawlChildSpec{MaxDepth: scope.MaxLimit, Pipeline: *pipeline, Fetchers: *fetchers,
			PartialWait: *partialWait, SyncInterval: *syncInterval}}
	if r.bin == "" && !r.inProcess {
		if r.bin, err = os.Executable(); err != nil {
			return err
		}
	}
	rep := benchCrawlReport{CPUs: runtime.NumCPU(), LoadStart: loadAvg(), Pipeline: *pipeline, Measured: "child processes"}
	if r.inProcess {
		rep.Measured = "in process"
	}
	if *useWeb {
		c, err := r.web(ctx, testweb.Config{Hosts: *webHosts, Seed: *webSeed, MaxPages: *webPages, Plain: true})
		if err != nil {
			return err
		}
		rep.Crawls = append(rep.Crawls, c)
	}
	if *useNginx {
		var colly string
		if *useColly {
			if colly, err = buildCollybench(ctx, *collyDir, tmp); err != nil {
				return err
			}
		}
		cs, note, err := r.nginx(ctx, *hostsPerDoc, *only, colly)
		if err != nil {
			return err
		}
		rep.Crawls = append(rep.Crawls, cs...)
		if note != "" {
			rep.Notes = append(rep.Notes, note)
		}
	}
	rep.LoadEnd = loadAvg()
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printCrawlReport(e.stdout, rep)
	return nil
}

func printCrawlReport(w io.Writer, rep benchCrawlReport) {
	fmt.Fprintf(w, "%d CPUs, load average %.2f %.2f %.2f before, %.2f %.2f %.2f after; kspider pipelining %d, measured in %s\n",
		rep.CPUs, rep.LoadStart[0], rep.LoadStart[1], rep.LoadStart[2], rep.LoadEnd[0], rep.LoadEnd[1], rep.LoadEnd[2], rep.Pipeline, rep.Measured)
	if len(rep.Crawls) > 0 && rep.Crawls[0].Rounds > 1 {
		fmt.Fprintf(w, "figures and ratios: medians of %d rounds, kspider and colly alternated\n", rep.Crawls[0].Rounds)
	}
	fmt.Fprintf(w, "%-22s %-8s %6s %8s %9s %8s %8s %10s %8s %s\n", "corpus", "crawler", "hosts", "pages", "pages/s", "MB/s", "CPU ms/pg", "peak RSS", "errors", "")
	row := func(c benchCrawlCase, who string, f crawlFigures) {
		done := ""
		if !f.Finished {
			done = "(not finished)"
		}
		fmt.Fprintf(w, "%-22s %-8s %6d %8d %9.0f %8.1f %8.3f %7.0f MB %8d %s\n", c.Corpus, who, c.Hosts, f.Pages, f.PagesPerS, f.MBPerS, f.CPUMsPerPage, f.PeakRSSMB, f.Errors, done)
	}
	for _, c := range rep.Crawls {
		row(c, "kspider", c.KSpider)
		if c.Colly != nil {
			row(c, "colly", *c.Colly)
		}
		if v := c.VsColly; v != nil {
			fmt.Fprintf(w, "%-22s %-8s pages/s %.2fx (target >= 2), CPU/page %.2fx (<= 0.3), peak RSS %.2fx (<= 1)\n", c.Corpus, "ratio", v.PagesPerS, v.CPUPerPage, v.PeakRSS)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(w, n)
	}
}

// crawlRunner runs kspider crawls, each in a child process (or in process).
type crawlRunner struct {
	tmp        string
	rounds     int
	inProcess  bool
	bin        string
	profile    string
	memProfile string
	spec       crawlChildSpec // the fields every crawl shares
	n          int
}

// web crawls a plain test web served by this process.
func (r *crawlRunner) web(ctx context.Context, cfg testweb.Config) (benchCrawlCase, error) {
	srv, err := testweb.Start(ctx, testweb.Generate(cfg), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		return benchCrawlCase{}, err
	}
	defer srv.Close()
	c := benchCrawlCase{Corpus: "testweb-plain", Hosts: cfg.Hosts}
	spec := r.spec
	spec.Seeds, spec.DNS, spec.CA = srv.SeedURLs(), srv.DNSAddr(), srv.CACertPEM()
	var ks []crawlFigures
	for range r.rounds {
		f, err := r.crawl(ctx, "testweb", spec)
		if err != nil {
			return c, err
		}
		ks = append(ks, f)
	}
	c.Rounds, c.KSpider = len(ks), medianFigures(ks)
	return c, nil
}

// nginx crawls each documentation package on its own hosts, then all of
// them together, with kspider and (when colly is a binary) colly.
func (r *crawlRunner) nginx(ctx context.Context, hostsPerDoc int, only, colly string) ([]benchCrawlCase, string, error) {
	nginxBin, ok1 := daemon.Look("nginx")
	dnsmasqBin, ok2 := daemon.Look("dnsmasq")
	if !ok1 || !ok2 {
		return nil, "nginx corpus skipped: nginx or dnsmasq not installed", nil
	}
	ng, err := testweb.StartNginx(ctx, testweb.NginxOptions{NginxBin: nginxBin, DnsmasqBin: dnsmasqBin, HostsPerDoc: hostsPerDoc})
	if errors.Is(err, testweb.ErrNoDocs) {
		return nil, "nginx corpus skipped: " + err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	defer ng.Stop()
	// Group the hosts by package; the label is the host name's second
	// label without its number ("www.pgdocs3.ac.th" → "pgdocs").
	groups := map[string][]string{}
	var labels []string
	for _, h := range ng.Hosts {
		label := strings.TrimRight(strings.Split(h.Name, ".")[1], "0123456789")
		if !strings.Contains(label, only) {
			continue
		}
		if groups[label] == nil {
			labels = append(labels, label)
		}
		groups[label] = append(groups[label], h.Name)
	}
	sort.Strings(labels)
	sets := [][]string{}
	names := []string{}
	var all []string
	for _, l := range labels {
		sets = append(sets, groups[l])
		names = append(names, "nginx-"+l)
		all = append(all, groups[l]...)
	}
	if len(labels) > 1 {
		sets = append(sets, all)
		names = append(names, "nginx-all")
	}
	var cases []benchCrawlCase
	for i, hosts := range sets {
		c := benchCrawlCase{Corpus: names[i], Hosts: len(hosts)}
		var seeds, quoted []string
		for _, h := range hosts {
			seeds = append(seeds, "http://"+h+":"+strconv.Itoa(ng.Port)+"/")
			quoted = append(quoted, regexp.QuoteMeta(h))
		}
		spec := r.spec
		spec.Seeds, spec.DNS = seeds, ng.DNSAddr
		// colly's scope (tools/collybench): .html and / paths, no query,
		// on the seeds' hosts.
		spec.Include = []string{`^http://(` + strings.Join(quoted, "|") + `):` + strconv.Itoa(ng.Port) + `(/[^?#]*)?(\.html|/)$`}
		// Rounds alternate kspider and colly, so that a load that comes
		// and goes weighs on both; each ratio is of one round's pair.
		var ks, cs []crawlFigures
		var rs []crawlRatios
		for range r.rounds {
			f, err := r.crawl(ctx, names[i], spec)
			if err != nil {
				return nil, "", err
			}
			ks = append(ks, f)
			if colly != "" {
				cf, err := runCollybench(ctx, colly, ng.DNSAddr, seeds)
				if err != nil {
					return nil, "", err
				}
				cs = append(cs, cf)
				rs = append(rs, crawlRatios{PagesPerS: ratio(f.PagesPerS, cf.PagesPerS),
					CPUPerPage: ratio(f.CPUMsPerPage, cf.CPUMsPerPage), PeakRSS: ratio(f.PeakRSSMB, cf.PeakRSSMB)})
			}
		}
		c.Rounds, c.KSpider = len(ks), medianFigures(ks)
		if len(cs) > 0 {
			f, v := medianFigures(cs), medianRatios(rs)
			c.Colly, c.VsColly = &f, &v
		}
		cases = append(cases, c)
	}
	return cases, "", nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// crawl runs one kspider crawl in a fresh data directory.
func (r *crawlRunner) crawl(ctx context.Context, name string, spec crawlChildSpec) (crawlFigures, error) {
	r.n++
	spec.Dir = filepath.Join(r.tmp, fmt.Sprintf("crawl%d", r.n))
	defer os.RemoveAll(spec.Dir)
	if r.profile != "" {
		spec.CPUProfile = r.profile + "-" + name + ".pprof"
	}
	if r.memProfile != "" {
		spec.MemProfile = r.memProfile + "-" + name + ".pprof"
	}
	if r.inProcess {
		cpu0, _ := rusageSelf()
		f, err := runCrawlSpec(ctx, spec)
		cpu1, rss := rusageSelf()
		setCPU(&f, cpu1-cpu0, rss)
		return f, err
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return crawlFigures{}, err
	}
	cmd := exec.CommandContext(ctx, r.bin, "bench", "crawl", "--child")
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	rss, err := runPeakRSS(cmd)
	if err != nil {
		return crawlFigures{}, fmt.Errorf("kspider crawl of %s: %v\n%s", name, err, errOut.String())
	}
	var f crawlFigures
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return f, fmt.Errorf("kspider crawl of %s: %v (%q)", name, err, out.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	setCPU(&f, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()), rss)
	return f, nil
}

// setCPU fills in the CPU and memory figures.
func setCPU(f *crawlFigures, cpu time.Duration, rssMB float64) {
	if f.Pages > 0 {
		f.CPUMsPerPage = float64(cpu.Microseconds()) / 1e3 / float64(f.Pages)
	}
	f.PeakRSSMB = rssMB
}

func rusageSelf() (time.Duration, float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), float64(ru.Maxrss) / 1024
}

// crawlChild is the child: it runs the crawl given on stdin and prints its
// figures as JSON; the parent adds CPU time and peak RSS.
func crawlChild(ctx context.Context, e env) error {
	var spec crawlChildSpec
	if err := json.NewDecoder(e.stdin).Decode(&spec); err != nil {
		return fmt.Errorf("crawl spec on stdin: %w", err)
	}
	f, err := runCrawlSpec(ctx, spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(f)
}

// runCrawlSpec crawls as one node, as `kspider run` would with the spec's
// settings, and times it from OpenNode to Close.
func runCrawlSpec(ctx context.Context, spec crawlChildSpec) (crawlFigures, error) {
	stopHeap := func() (uint64, error) { return 0, nil }
	if spec.MemProfile != "" {
		stopHeap = heapProfiling(spec.MemProfile + "-peak")
	}
	stopProfile, err := startCPUProfile(spec.CPUProfile)
	if err != nil {
		return crawlFigures{}, err
	}
	defer stopProfile()
	res, err := resolver.New(resolver.Config{Servers: []string{spec.DNS}, Network: "ip4"})
	if err != nil {
		return crawlFigures{}, err
	}
	defer res.Close()
	var roots *x509.CertPool
	if len(spec.CA) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(spec.CA) {
			return crawlFigures{}, errors.New("crawl spec: no certificate in ca")
		}
	}
	def := spider.Defaults()
	sc := scope.Default()
	sc.Include = spec.Include
	start := time.Now()
	node, err := spider.OpenNode(spider.NodeConfig{
		Dir: spec.Dir, Seeds: spec.Seeds, MaxDepth: spec.MaxDepth, MaxLinks: def.Limits.MaxLinksPerPage, Scope: &sc,
		Codec:   def.Storage.Codec,
		RootCAs: roots,
		Lookup:  func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
		Collector: collector.Config{Fetchers: spec.Fetchers, Pipeline: spec.Pipeline,
			ConnectTimeout: def.Limits.ConnectTimeout.Duration, FirstByte: def.Limits.FirstByteTimeout.Duration,
			ResponseTimeout: def.Limits.ResponseTimeout.Duration, IdleRead: def.Limits.IdleTimeout.Duration,
			MaxBody: def.Limits.MaxBody},
		Scheduler:    scheduler.Config{PartialWait: spec.PartialWait},
		SyncInterval: spec.SyncInterval,
	})
	if err != nil {
		return crawlFigures{}, err
	}
	sum, runErr := node.Run(ctx)
	if spec.MemProfile != "" {
		if _, err := stopHeap(); err != nil {
			return crawlFigures{}, err
		}
		if err := writeHeapProfile(spec.MemProfile); err != nil {
			return crawlFigures{}, err
		}
	}
	closeErr := node.Close()
	secs := time.Since(start).Seconds()
	if err := errors.Join(runErr, unseen(runErr, closeErr)); err != nil {
		return crawlFigures{}, err
	}
	f := crawlFigures{Pages: int64(sum.Stored), Bytes: int64(sum.Bytes), Errors: int64(sum.Errors), Seconds: secs, Finished: sum.Finished}
	if secs > 0 {
		f.PagesPerS = float64(f.Pages) / secs
		f.MBPerS = float64(f.Bytes) / 1e6 / secs
	}
	return f, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// buildCollybench builds tools/collybench (its own module) into dir.
func buildCollybench(ctx context.Context, src, dir string) (string, error) {
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "tools", "collybench", "go.mod")); err == nil {
				src = filepath.Join(d, "tools", "collybench")
				break
			}
			if filepath.Dir(d) == d {
				return "", fmt.Errorf("tools/collybench not found above %s: give --collybench DIR, or --colly=false", wd)
			}
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin = filepath.Join(runtime.GOROOT(), "bin", "go"); !fileExists(goBin) {
			return "", errors.New("the go command is needed to build tools/collybench (or --colly=false)")
		}
	}
	out := filepath.Join(dir, "collybench")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, ".")
	cmd.Dir = src
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", src, err, msg)
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runCollybench crawls seeds with colly in a child process.
func runCollybench(ctx context.Context, bin, dns string, seeds []string) (crawlFigures, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--json", "--threads", "16", "--dns", dns}, seeds...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	rss, err := runPeakRSS(cmd)
	if err != nil {
		return crawlFigures{}, fmt.Errorf("collybench: %v\n%s", err, errOut.String())
	}
	var res struct {
		Pages, Bytes, Errors int64
		Seconds              float64
	}
	line, _ := bufio.NewReader(&out).ReadBytes('\n')
	if err := json.Unmarshal(line, &res); err != nil {
		return crawlFigures{}, fmt.Errorf("collybench: %v (%q)", err, line)
	}
	f := crawlFigures{Pages: res.Pages, Bytes: res.Bytes, Errors: res.Errors, Seconds: res.Seconds, Finished: true}
	if f.Seconds > 0 {
		f.PagesPerS = float64(f.Pages) / f.Seconds
		f.MBPerS = float64(f.Bytes) / 1e6 / f.Seconds
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	setCPU(&f, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()), rss)
	return f, nil
}

// loadAvg reads /proc/loadavg (zeros elsewhere).
func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(b))[:3] {
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}
