package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/tools/daemon"
	"github.com/kspider/kspider/tools/testweb"
	"golang.org/x/sys/unix"
)

// benchCollectorReport is what `kspider bench collector` reports.
type benchCollectorReport struct {
	Concurrency int                    `json:"concurrency"`  // lists (hosts) fetched at once, in every mode
	Rounds      int                    `json:"rounds"`       // runs of each mode; the median by pages per CPU-second is shown
	Repeat      int                    `json:"nginx_repeat"` // passes over the nginx corpus per run
	Server      string                 `json:"server"`       // "child process" or "in process" (then CPU figures include the server)
	Corpora     []benchCollectorCorpus `json:"corpora"`
}

type benchCollectorCorpus struct {
	Corpus string               `json:"corpus"`
	Hosts  int                  `json:"hosts"`
	Pages  int                  `json:"pages"`
	Bytes  int64                `json:"bytes"` // body bytes of one pass
	Modes  []benchCollectorMode `json:"modes"`
	Note   string               `json:"note,omitempty"`
}

type benchCollectorMode struct {
	Mode            string     `json:"mode"` // collector, collector-pipeline-8, net/http
	PagesPerSec     float64    `json:"pages_per_s"`
	CPUMsPerPage    float64    `json:"cpu_ms_per_page"`
	PagesPerCPUSec  float64    `json:"pages_per_cpu_s"`
	AllocsPerPage   float64    `json:"allocs_per_page"`
	WireBytesPerPg  float64    `json:"wire_bytes_per_page"`
	VsNetHTTP       float64    `json:"vs_net_http"`       // pages per CPU-second over net/http's in the same round, median over rounds
	VsNetHTTPRange  [2]float64 `json:"vs_net_http_range"` // lowest and highest round
	Errors          int        `json:"errors"`            // pages not fetched complete with status 200
	Connections     int        `json:"connections"`
	PipelinedShare  float64    `json:"pipelined_share,omitempty"`
	IOCallsPerPage  float64    `json:"io_calls_per_page"` // reads and writes on the connections
	roundsPerCPUSec []float64
}

func benchCollector(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench collector", "bench collector [--hosts N] [--pages N] [--concurrency N] [--rounds N] [--nginx] [--json]",
		`Fetches the same URL lists with the collector (pipelining off, and at
depth 8) and, in the same run, with a net/http Transport baseline (keep-alive,
one connection per host, the same concurrency), and reports for each pages/s,
CPU ms per page, pages per CPU-second, allocations per page and HTTP bytes on
the wire per page, with the ratio to net/http's pages per CPU-second
(targets: >= 1.3 without pipelining, >= 2 at depth 8).

Corpora: a --plain test web (seed 1) served by a child process (so this
process's CPU time is the client's only), and, unless --nginx=false or nginx
is missing, the Debian documentation served by tools/testweb/nginx.sh.
Modes are interleaved round by round so the shared machine's load falls on
all of them alike.`)
	hosts := fs.Int("hosts", 50, "hosts of the test web")
	pages := fs.Int("pages", 5000, "at most this many test web URLs")
	conc := fs.Int("concurrency", 16, "lists fetched at once")
	rounds := fs.Int("rounds", 7, "runs of each mode per corpus")
	repeat := fs.Int("nginx-repeat", 4, "passes over the nginx corpus per run (it has ~1,200 files)")
	useWeb := fs.Bool("testweb", true, "fetch the test web corpus")
	useNginx := fs.Bool("nginx", true, "also fetch the nginx documentation corpus (skipped when nginx or the docs are missing)")
	inProcess := fs.Bool("in-process", false, "serve the test web in this process (CPU figures then include the server; for tests)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	serve := fs.Bool("serve-child", false, "internal: serve the test web and print its addresses (the parent's child process)")
	seed := fs.Int64("seed", 1, "test web seed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the client to `FILE`")
	only := fs.String("mode", "", "run only this mode (net/http, collector, collector-pipeline-8) besides net/http")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	webCfg := testweb.Config{Hosts: *hosts, Seed: *seed, Plain: true, MaxPages: 2000}
	if *serve {
		return serveBenchWeb(ctx, e, webCfg)
	}
	if *hosts < 1 || *pages < 1 || *conc < 1 || *rounds < 1 || *repeat < 1 {
		return usagef("--hosts, --pages, --concurrency, --rounds and --nginx-repeat must be positive")
	}
	switch *only {
	case "", "net/http", "collector", "collector-pipeline-8":
	default:
		// Checked here, not after the test web's child process is up.
		return usagef("--mode %q is not net/http, collector or collector-pipeline-8", *only)
	}
	if !*useWeb && !*useNginx {
		return usagef("--testweb=false and --nginx=false leave nothing to fetch")
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rep := benchCollectorReport{Concurrency: *conc, Rounds: *rounds, Repeat: *repeat, Server: "child process"}
	if *inProcess {
		rep.Server = "in process"
	}

	if *useWeb {
		c, err := webCorpus(ctx, webCfg, *inProcess, *pages, *conc, *rounds, *only)
		if err != nil {
			return err
		}
		rep.Corpora = append(rep.Corpora, c)
	}
	if *useNginx {
		c, err := nginxCorpus(ctx, *conc, *rounds, *repeat, *only)
		if err != nil {
			return err
		}
		rep.Corpora = append(rep.Corpora, c)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(e.stdout, "concurrency %d, %d rounds (median shown), server %s\n", rep.Concurrency, rep.Rounds, rep.Server)
	for _, c := range rep.Corpora {
		fmt.Fprintf(e.stdout, "\n%s: %d pages on %d hosts, %.1f MB %s\n", c.Corpus, c.Pages, c.Hosts, float64(c.Bytes)/1e6, c.Note)
		fmt.Fprintf(e.stdout, "%-22s %10s %10s %12s %10s %10s %8s %8s %12s %6s\n", "mode", "pages/s", "cpu_ms/pg", "pages/cpu_s", "allocs/pg", "wire_B/pg", "io/pg", "vs_http", "(range)", "errors")
		for _, m := range c.Modes {
			fmt.Fprintf(e.stdout, "%-22s %10.0f %10.4f %12.0f %10.1f %10.0f %8.2f %8.2f %5.2f-%-5.2f %6d\n", m.Mode, m.PagesPerSec, m.CPUMsPerPage, m.PagesPerCPUSec, m.AllocsPerPage, m.WireBytesPerPg, m.IOCallsPerPage, m.VsNetHTTP, m.VsNetHTTPRange[0], m.VsNetHTTPRange[1], m.Errors)
		}
	}
	return nil
}

// webCorpus fetches a --plain test web served by a child process (or in
// process).
func webCorpus(ctx context.Context, webCfg testweb.Config, inProcess bool, pages, conc, rounds int, only string) (benchCollectorCorpus, error) {
	var addrs benchWebAddrs
	if inProcess {
		srv, err := testweb.Start(ctx, testweb.Generate(webCfg), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
		if err != nil {
			return benchCollectorCorpus{}, err
		}
		defer srv.Close()
		addrs = benchWebAddrs{DNS: srv.DNSAddr(), Ports: srv.Ports(), CA: srv.CACertPEM()}
	} else {
		stop, a, err := startBenchWebChild(ctx, webCfg)
		if err != nil {
			return benchCollectorCorpus{}, err
		}
		defer stop()
		addrs = a
	}
	truth := testweb.Generate(webCfg).Truth(addrs.Ports)
	var urls []string
	for _, d := range truth.Reachable(1000, pages) {
		if d.Kind == "page" || d.Kind == "resource" {
			urls = append(urls, d.URL)
		}
	}
	return runCorpus(ctx, "testweb-plain", addrs.DNS, addrs.CA, urls, conc, rounds, only)
}

// benchWebAddrs is what the child serving the test web prints.
type benchWebAddrs struct {
	DNS   string        `json:"dns"`
	Ports testweb.Ports `json:"ports"`
	CA    []byte        `json:"ca"` // PEM
}

// serveBenchWeb is the child: it serves the web until stdin closes.
func serveBenchWeb(ctx context.Context, e env, cfg testweb.Config) error {
	srv, err := testweb.Start(ctx, testweb.Generate(cfg), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := json.NewEncoder(e.stdout).Encode(benchWebAddrs{DNS: srv.DNSAddr(), Ports: srv.Ports(), CA: srv.CACertPEM()}); err != nil {
		return err
	}
	io.Copy(io.Discard, e.stdin)
	return nil
}

func startBenchWebChild(ctx context.Context, cfg testweb.Config) (stop func(), a benchWebAddrs, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, a, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "collector", "--serve-child", "--hosts", strconv.Itoa(cfg.Hosts), "--seed", strconv.FormatInt(cfg.Seed, 10))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, a, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, a, err
	}
	if err := cmd.Start(); err != nil {
		return nil, a, err
	}
	stop = func() { in.Close(); cmd.Wait() }
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &a)
	}
	if err != nil {
		stop()
		return nil, a, fmt.Errorf("test web child: %v (%q)", err, line)
	}
	return stop, a, nil
}

func nginxCorpus(ctx context.Context, conc, rounds, repeat int, only string) (benchCollectorCorpus, error) {
	c := benchCollectorCorpus{Corpus: "nginx-docs"}
	nginxBin, ok1 := daemon.Look("nginx")
	dnsmasqBin, ok2 := daemon.Look("dnsmasq")
	if !ok1 || !ok2 {
		c.Note = "(skipped: nginx or dnsmasq not installed)"
		return c, nil
	}
	ng, err := testweb.StartNginx(ctx, testweb.NginxOptions{NginxBin: nginxBin, DnsmasqBin: dnsmasqBin})
	if errors.Is(err, testweb.ErrNoDocs) {
		c.Note = "(skipped: " + err.Error() + ")"
		return c, nil
	}
	if err != nil {
		return c, err
	}
	defer ng.Stop()
	byRoot := map[string][]testweb.NginxHost{}
	for _, h := range ng.Hosts {
		byRoot[h.Root] = append(byRoot[h.Root], h)
	}
	var urls []string
	for root, hosts := range byRoot {
		var files []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				rel, _ := filepath.Rel(root, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		for range max(repeat, 1) {
			for i, f := range files {
				h := hosts[i%len(hosts)]
				u := url.URL{Scheme: "http", Host: h.Name + ":" + strconv.Itoa(ng.Port), Path: "/" + f}
				urls = append(urls, u.String())
			}
		}
	}
	return runCorpus(ctx, "nginx-docs", ng.DNSAddr, nil, urls, conc, rounds, only)
}

// benchList is one host's URLs.
type benchList struct {
	origin string
	urls   []string
}

func groupByOrigin(urls []string) []benchList {
	idx := map[string]int{}
	var lists []benchList
	for _, u := range urls {
		i := strings.Index(u[strings.Index(u, "//")+2:], "/") + strings.Index(u, "//") + 2
		o := u[:i]
		k, ok := idx[o]
		if !ok {
			k = len(lists)
			idx[o] = k
			lists = append(lists, benchList{origin: o})
		}
		lists[k].urls = append(lists[k].urls, u)
	}
	// The longest lists first, so that no long list starts last.
	sort.SliceStable(lists, func(a, b int) bool { return len(lists[a].urls) > len(lists[b].urls) })
	return lists
}

// runCorpus fetches the URLs in every mode, rounds times, interleaved.
func runCorpus(ctx context.Context, name, dns string, caPEM []byte, urls []string, conc, rounds int, only string) (benchCollectorCorpus, error) {
	c := benchCollectorCorpus{Corpus: name, Pages: len(urls)}
	lists := groupByOrigin(urls)
	c.Hosts = len(lists)
	res, err := resolver.New(resolver.Config{Servers: []string{dns}, Network: "ip4"})
	if err != nil {
		return c, err
	}
	defer res.Close()
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if len(caPEM) > 0 && !roots.AppendCertsFromPEM(caPEM) {
		return c, errors.New("the test web's CA is not PEM")
	}
	for _, l := range lists { // warm the cache: every mode resolves from it
		if _, err := lookup(ctx, strings.Split(strings.Split(l.origin, "//")[1], ":")[0]); err != nil {
			return c, err
		}
	}
	type mode struct {
		name string
		run  func() (pages, errs, conns, pipelined, calls int, wire, body int64, err error)
	}
	modes := []mode{
		{"net/http", func() (int, int, int, int, int, int64, int64, error) {
			return fetchNetHTTP(ctx, lookup, roots, lists, conc)
		}},
		{"collector", func() (int, int, int, int, int, int64, int64, error) {
			return fetchCollector(ctx, lookup, roots, lists, conc, 1)
		}},
		{"collector-pipeline-8", func() (int, int, int, int, int, int64, int64, error) {
			return fetchCollector(ctx, lookup, roots, lists, conc, 8)
		}},
	}
	if only != "" && only != "net/http" {
		keep := modes[:1]
		for _, m := range modes[1:] {
			if m.name == only {
				keep = append(keep, m)
			}
		}
		if len(keep) == 1 {
			return c, usagef("--mode %q is not collector or collector-pipeline-8", only)
		}
		modes = keep
	}
	out := make([]benchCollectorMode, len(modes))
	type sample struct {
		wall, cpu                            time.Duration
		allocs                               uint64
		pages, errs, conns, pipelined, calls int
		wire                                 int64
	}
	samples := make([][]sample, len(modes))
	for range rounds {
		for i, m := range modes {
			runtime.GC()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime()
			t0 := time.Now()
			pages, errs, conns, pipelined, calls, wire, body, err := m.run()
			if err != nil {
				return c, fmt.Errorf("%s, %s: %w", name, m.name, err)
			}
			wall := time.Since(t0)
			cpu := cpuTime() - cpu0
			runtime.ReadMemStats(&ms1)
			c.Bytes = body
			samples[i] = append(samples[i], sample{wall, cpu, ms1.Mallocs - ms0.Mallocs, pages, errs, conns, pipelined, calls, wire})
		}
	}
	// The ratio to net/http is taken round by round (both ran under the
	// same load) and its median reported.
	ratios := make([][]float64, len(modes))
	for i := range modes {
		for r := range samples[i] {
			mine := float64(samples[i][r].pages) / samples[i][r].cpu.Seconds()
			base := float64(samples[0][r].pages) / samples[0][r].cpu.Seconds()
			ratios[i] = append(ratios[i], mine/base)
		}
		sort.Float64s(ratios[i])
	}
	for i, m := range modes {
		ss := samples[i]
		sort.Slice(ss, func(a, b int) bool {
			return float64(ss[a].pages)/ss[a].cpu.Seconds() < float64(ss[b].pages)/ss[b].cpu.Seconds()
		})
		s := ss[len(ss)/2]
		p := float64(s.pages)
		out[i] = benchCollectorMode{Mode: m.name, PagesPerSec: p / s.wall.Seconds(), CPUMsPerPage: float64(s.cpu.Microseconds()) / 1000 / p,
			PagesPerCPUSec: p / s.cpu.Seconds(), AllocsPerPage: float64(s.allocs) / p, WireBytesPerPg: float64(s.wire) / p,
			Errors: s.errs, Connections: s.conns, PipelinedShare: float64(s.pipelined) / p, IOCallsPerPage: float64(s.calls) / p}
	}
	for i := range out {
		out[i].VsNetHTTP = ratios[i][len(ratios[i])/2]
		out[i].VsNetHTTPRange = [2]float64{ratios[i][0], ratios[i][len(ratios[i])-1]}
	}
	c.Modes = out
	return c, nil
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fetchCollector fetches every list through a collector with conc fetchers.
func fetchCollector(ctx context.Context, lookup collector.LookupFunc, roots *x509.CertPool, lists []benchList, conc, depth int) (pages, errs, conns, pipelined, calls int, wire, body int64, err error) {
	col, err := collector.New(collector.Config{UserAgent: spider.DefaultUserAgent, Lookup: lookup, RootCAs: roots, Fetchers: conc, Pipeline: depth})
	if err != nil {
		return
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for _, l := range lists {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cl := &collector.List{Requests: make([]collector.Request, len(l.urls))}
			for i, u := range l.urls {
				cl.Requests[i] = collector.Request{ID: uint64(i), URL: u}
			}
			// Each page is looked at and released as it arrives, as the
			// baseline reuses one buffer per list.
			var e, p int
			var w, n int64
			cl.Each = func(r *collector.Result) {
				if r.Kind != collector.OK || r.Status != 200 {
					e++
				}
				if r.Pipelined {
					p++
				}
				w += r.WireBytes
				n += int64(len(r.Body))
				col.ReleaseResult(r)
			}
			b := col.Fetch(ctx, cl)
			mu.Lock()
			pages += len(b.Results)
			errs += e
			conns += b.Connections
			calls += b.Reads + b.Writes
			pipelined += p
			wire += w
			body += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return
}

// countConn counts the bytes a net/http connection reads and writes.
type countConn struct {
	net.Conn
	n, calls *atomic.Int64
}

func (c countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	c.calls.Add(1)
	return n, err
}

func (c countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	c.calls.Add(1)
	return n, err
}

// fetchNetHTTP is the baseline: a net/http Transport with keep-alive and
// one connection per host, conc hosts at a time, each list's URLs in order.
func fetchNetHTTP(ctx context.Context, lookup collector.LookupFunc, roots *x509.CertPool, lists []benchList, conc int) (pages, errs, conns, pipelined, calls int, wire, body int64, err error) {
	var wireN, connN, callN atomic.Int64
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			ips, err := lookup(ctx, host)
			if err != nil || len(ips) == 0 {
				return nil, fmt.Errorf("lookup %s: %v", host, err)
			}
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ips[0].String(), port))
			if err != nil {
				return nil, err
			}
			connN.Add(1)
			return countConn{c, &wireN, &callN}, nil
		},
		MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, MaxIdleConns: 4096, IdleConnTimeout: 30 * time.Second,
		TLSClientConfig: &tls.Config{RootCAs: roots},
		TLSNextProto:    map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	// Body buffers are reused as the collector's pool reuses its own: one
	// per list in flight, grown to the largest body it met.
	free := make(chan []byte, conc)
	for range conc {
		free <- make([]byte, 0, 16<<10)
	}
	for _, l := range lists {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			buf := <-free
			defer func() { free <- buf }()
			var e int
			var n int64
			for _, u := range l.urls {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if err != nil {
					e++
					continue
				}
				req.Header.Set("User-Agent", spider.DefaultUserAgent)
				resp, err := client.Do(req)
				if err != nil {
					e++
					continue
				}
				buf = buf[:0]
				if n := int(resp.ContentLength) + 1; n > cap(buf) {
					buf = make([]byte, 0, n)
				}
				for {
					if len(buf) == cap(buf) {
						buf = append(buf, 0)[:len(buf)]
					}
					k, rerr := resp.Body.Read(buf[len(buf):cap(buf)])
					buf = buf[:len(buf)+k]
					if rerr != nil {
						if rerr != io.EOF {
							e++
						}
						break
					}
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					e++
				}
				n += int64(len(buf))
			}
			mu.Lock()
			pages += len(l.urls)
			errs += e
			body += n
			mu.Unlock()
		})
	}
	wg.Wait()
	calls = int(callN.Load())
	return pages, errs, int(connN.Load()), 0, calls, wireN.Load(), body, nil
}
