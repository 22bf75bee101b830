package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

// clusterBenchRun is one crawl of `kspider bench cluster`.
type clusterBenchRun struct {
	Nodes     int     `json:"nodes"`
	Partition string  `json:"partition"`
	Pages     int     `json:"pages"`
	Seconds   float64 `json:"seconds"`
	// TailSeconds is how long the last node process ran after the web
	// answered its last request: the end of the crawl (the cluster's
	// termination detection, the final syncs) and the processes' exits.
	TailSeconds  float64   `json:"tail_seconds"`
	PagesPerS    float64   `json:"pages_per_s"`
	CPUmsPerPage float64   `json:"cpu_ms_per_page"` // the node processes' user+system CPU per page stored
	CPURatio     float64   `json:"cpu_ratio"`       // over the one node's (median of the rounds')
	CPURatios    []float64 `json:"cpu_ratios"`      // each round's, in order
	// CPURatioSeparate is the CPU per page over the "separate" crawl's of
	// the same round (median of the rounds'), when that crawl ran: for a
	// cluster, what its own code costs above the floor; for "alone", what
	// is left of the floor when the nodes do not run at once.
	CPURatioSeparate float64 `json:"cpu_ratio_to_separate,omitempty"`
	Rounds           int     `json:"rounds"`
	SysShare         float64 `json:"sys_share"` // the part of that CPU in the kernel
	// Per page stored, all node processes: context switches (voluntary and
	// not) and minor page faults, from wait4's rusage.
	CtxSwPerPage  float64 `json:"ctx_switches_per_page"`
	FaultsPerPage float64 `json:"page_faults_per_page"`
	// CPUmsPerNode is each node process's user+system CPU (ms), its start
	// and exit included.
	CPUmsPerNode []float64 `json:"cpu_ms_per_node"`
	URLsPerPage  float64   `json:"urls_sent_per_page"`
	DgramPerPage float64   `json:"datagrams_per_page"`
	BytesPerPage float64   `json:"bytes_per_page"`       // UDP payload bytes out, all nodes
	ConnsPerPage float64   `json:"connections_per_page"` // TCP connections the web accepted, robots.txt ones included
	ReqsPerPage  float64   `json:"requests_per_page"`    // requests the web served (robots.txt, fetches cut at a slot's end)
	PagesPerNode []int     `json:"pages_per_node"`
	URLsPerNode  []int     `json:"urls_per_node"`
	// ErrorsPerNode is each node's errors (failed fetches, robots.txt
	// unreachable) from its counts line: pages a loaded machine cost a
	// crawl, which then stores fewer than the same web crawled alone.
	ErrorsPerNode []int   `json:"errors_per_node"`
	BytesPerNode  []int64 `json:"bytes_per_node"` // page bytes stored
	Balance       float64 `json:"balance"`        // most pages on one node / mean
}

func benchCluster(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench cluster", "bench cluster [--nodes N] [--hosts H] [--max-pages P] [--depth D] [--phase-length D] [--partitions url,host,separate,alone] [--rounds R] [--node-procs N] [--cpuprofile PREFIX] [--logs DIR] [--json]",
		`Crawls one test web (plain, on loopback) with one 'kspider run' process,
then with a cluster of --nodes processes on this machine (UDP on
127.0.0.1), partitioned by URL and then by host (--partitions), --rounds
times in turn (medians reported). Every cluster crawl must store the same
pages as the one node (exit 1 otherwise). Reports pages/s, the node
processes' CPU ms per page and its ratio to the one node's (target <=
1.25), URLs sent, datagrams and UDP bytes per page, and the balance of
pages, URLs and bytes across nodes.
The pseudo-partition "separate" runs --nodes independent nodes instead,
no cluster, each crawling a test web of its own with hosts/nodes hosts,
the webs together as large as the cluster's: the floor of the ratio on
this machine, what that many processes cost without any cluster code.
The pseudo-partition "alone" crawls the same webs with the same nodes one
after another instead of at once: what they cost when none shares the
cores with another, as on machines of their own.`)
	nodes := fs.Int("nodes", 4, "nodes of the cluster")
	hosts := fs.Int("hosts", 1000, "hosts of the test web")
	maxPages := fs.Int("max-pages", 400, "pages of the largest host")
	depth := fs.Int("depth", 4, "link depth")
	phase := fs.Duration("phase-length", 2*time.Second, "phase length of the cluster")
	asJSON := fs.Bool("json", false, "print one JSON object")
	procs := fs.Int("node-procs", 0, "GOMAXPROCS of each node process of a cluster (0: the machine's CPUs shared out, at least 1)")
	cpuProfile := fs.String("cpuprofile", "", "write each node process's CPU profile to `PREFIX`-<nodes>-<partition>-<node>.pprof")
	rounds := fs.Int("rounds", 3, "crawl each configuration this many times, in turn; report the medians")
	logs := fs.String("logs", "", "keep each node's output, progress lines included, in `DIR`/<round>-<nodes>-<partition>-<node>.log")
	partitions := fs.String("partitions", "url,host,separate,alone", "comma-separated partitions of the cluster's crawls (url, host, domain; separate: independent nodes, no cluster; alone: the same one at a time)")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *nodes < 2 || *nodes > 64 {
		return usagef("--nodes %d: want 2..64", *nodes)
	}
	if *rounds < 1 || *rounds > 100 {
		return usagef("--rounds %d: want 1..100", *rounds)
	}
	parts := strings.Split(*partitions, ",")
	for _, p := range parts {
		if _, err := cluster.ParsePartition(p); (err != nil || p == "") && !noCluster(p) {
			return usagef("--partitions %q: %q is not url, host, domain, separate or alone", *partitions, p)
		}
	}
	if *logs != "" {
		// Made now, not when the first node's output is written at the end
		// of a crawl of minutes, whose figures a bad path would throw away.
		if err := os.MkdirAll(*logs, 0o755); err != nil {
			return fmt.Errorf("--logs %s: %w", *logs, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	b := clusterBench{depth: *depth, phase: *phase, profile: *cpuProfile, procs: *procs, logs: *logs,
		command: func(args []string) *exec.Cmd { return exec.CommandContext(ctx, exe, args...) }}
	runs, err := b.runAll(ctx, testweb.Config{Hosts: *hosts, Seed: 1, MaxPages: *maxPages, MinPages: 2,
		MeanPageSize: 4000, Seeds: 40, Plain: true}, *nodes, parts, *rounds)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Hosts int               `json:"hosts"`
			Runs  []clusterBenchRun `json:"runs"`
		}{*hosts, runs})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tpartition\tpages\tpages/s\ttail s\tCPU ms/page\tratio\t÷ separate\tURLs sent/page\tdatagrams/page\tbytes/page\tconns/page\treqs/page\tbalance\tpages per node\t")
	for _, r := range runs {
		vs := "-"
		if r.CPURatioSeparate > 0 {
			vs = fmt.Sprintf("%.2f", r.CPURatioSeparate)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.1f\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%.0f\t%.2f\t%.2f\t%.2f\t%v\t\n", r.Nodes, r.Partition, r.Pages, r.PagesPerS, r.TailSeconds,
			r.CPUmsPerPage, r.CPURatio, vs, r.URLsPerPage, r.DgramPerPage, r.BytesPerPage, r.ConnsPerPage, r.ReqsPerPage, r.Balance, r.PagesPerNode)
	}
	return tw.Flush()
}

type clusterBench struct {
	command     func(args []string) *exec.Cmd // a `kspider` command line
	tmp, secret string
	web         clusterWeb // the web every cluster crawl shares
	depth       int
	phase       time.Duration
	profile     string // CPU profile path prefix, "" for none
	procs       int    // GOMAXPROCS of a cluster's nodes; 0: shared out
	logs        string // directory for the nodes' output, "" for none
	seq         int
	log         *logCounter
	separate    []clusterWeb      // the webs of the "separate" and "alone" crawls
	servers     []*testweb.Server // every web, for FlushLog
}

// counts flushes the webs' request logs and counts their lines.
func (b *clusterBench) counts() (conns, reqs int) {
	for _, s := range b.servers {
		s.FlushLog()
	}
	return b.log.counts()
}

// clusterWeb is a web a bench crawl is given: its seeds, its DNS server
// and the file of its CA certificate.
type clusterWeb struct {
	seeds   []string
	dns, ca string
}

// startClusterWeb serves the web of c on loopback, logging to log, and
// writes its CA certificate to ca. The server is returned, for the caller
// to close, even with an error.
func startClusterWeb(ctx context.Context, c testweb.Config, ca string, log io.Writer) (*testweb.Server, clusterWeb, error) {
	srv, err := testweb.Start(ctx, testweb.Generate(c), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0", Log: log})
	if err != nil {
		return nil, clusterWeb{}, err
	}
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
		return srv, clusterWeb{}, err
	}
	return srv, clusterWeb{seeds: srv.SeedURLs(), dns: srv.DNSAddr(), ca: ca}, nil
}

// logCounter counts the test webs' request log lines by kind.
type logCounter struct {
	mu          sync.Mutex
	conns, reqs int
	lastEnd     int64 // the latest "end" of a request, Unix ns
}

// source returns a writer for one web's log. Each web has its own: a web
// flushes its log in blocks that may end inside a line, and blocks of two
// webs run together would splice a line of each (a request's "end" read on
// with the other's digits gave tails of -4e9 s).
func (l *logCounter) source() io.Writer { return &logSource{l: l} }

// logSource is one web's log into a logCounter: its unfinished line.
type logSource struct {
	l    *logCounter
	part []byte
}

func (s *logSource) Write(p []byte) (int, error) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		line := s.part[:i]
		switch {
		case bytes.Contains(line, []byte(`"ev":"conn"`)):
			l.conns++
		case bytes.Contains(line, []byte(`"ev":"req"`)):
			l.reqs++
			if i := bytes.Index(line, []byte(`"end":`)); i >= 0 {
				var end int64
				for _, c := range line[i+len(`"end":`):] {
					if c < '0' || c > '9' {
						break
					}
					end = end*10 + int64(c-'0')
				}
				l.lastEnd = max(l.lastEnd, end)
			}
		}
		s.part = s.part[i+1:]
	}
	s.part = append(s.part[:0:0], s.part...)
	return len(p), nil
}

func (l *logCounter) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastEnd
}

func (l *logCounter) counts() (conns, reqs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, l.reqs
}

// runAll crawls web with one node, then with n partitioned by each of
// parts ("url", "host", "domain"; "separate": n nodes without a cluster,
// each on a web of its own; "alone": the same one at a time), rounds
// times in turn, and checks that every cluster crawl stores the same pages. Each configuration's figures are those
// of its median round by CPU per page; its CPURatio is the median of the
// rounds' ratios, each to the one node of the same round.
func (b *clusterBench) runAll(ctx context.Context, web testweb.Config, n int, parts []string, rounds int) ([]clusterBenchRun, error) {
	tmp, err := os.MkdirTemp("", "kspider-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	b.log = &logCounter{}
	srv, w, err := startClusterWeb(ctx, web, filepath.Join(tmp, "ca.pem"), b.log.source())
	if srv != nil {
		defer srv.Close()
	}
	if err != nil {
		return nil, err
	}
	b.servers, b.web = []*testweb.Server{srv}, w
	b.tmp, b.secret = tmp, filepath.Join(tmp, "secret")
	if err := os.WriteFile(b.secret, []byte("bench-secret-0123456789abcdef"), 0o600); err != nil {
		return nil, err
	}
	for _, p := range parts {
		if noCluster(p) && b.separate == nil {
			webs, servers, err := startSeparate(ctx, web, n, b.depth, tmp, b.log)
			for _, s := range servers {
				defer s.Close()
			}
			if err != nil {
				return nil, err
			}
			b.separate, b.servers = webs, append(b.servers, servers...)
		}
	}
	type config struct {
		n    int
		part string
	}
	configs := []config{{1, "url"}}
	for _, p := range parts {
		configs = append(configs, config{n, p})
	}
	all := make([][]clusterBenchRun, len(configs))
	sep := slices.IndexFunc(configs, func(c config) bool { return c.part == separatePart })
	var ref map[string]bool
	for round := range max(rounds, 1) {
		var one float64
		for i, c := range configs {
			r, urls, err := b.crawl(ctx, c.n, c.part)
			if err != nil {
				return nil, err
			}
			if ref == nil {
				ref = urls
			} else if d := diffCount(ref, urls); d > 0 && !noCluster(c.part) {
				return nil, fmt.Errorf("%d nodes, partition %s: %d URLs differ from the one node's store", c.n, c.part, d)
			}
			if i == 0 {
				one = r.CPUmsPerPage
			}
			r.CPURatio = r.CPUmsPerPage / one
			all[i] = append(all[i], r)
		}
		if sep >= 0 {
			for j, d := range configs {
				if d.n > 1 && j != sep {
					all[j][round].CPURatioSeparate = all[j][round].CPUmsPerPage / all[sep][round].CPUmsPerPage
				}
			}
		}
	}
	var runs []clusterBenchRun
	for _, rs := range all {
		byCPU := append([]clusterBenchRun(nil), rs...)
		sort.Slice(byCPU, func(i, j int) bool { return byCPU[i].CPUmsPerPage < byCPU[j].CPUmsPerPage })
		m := byCPU[len(byCPU)/2]
		m.Rounds = len(rs)
		m.CPURatio = medianOf(rs, func(r clusterBenchRun) float64 { return r.CPURatio })
		m.CPURatioSeparate = medianOf(rs, func(r clusterBenchRun) float64 { return r.CPURatioSeparate })
		for _, r := range rs {
			m.CPURatios = append(m.CPURatios, r.CPURatio)
		}
		runs = append(runs, m)
	}
	return runs, nil
}

// crawl runs n `kspider run` processes to the end and reads their figures.
func (b *clusterBench) crawl(ctx context.Context, n int, part string) (clusterBenchRun, map[string]bool, error) {
	b.seq++
	r := clusterBenchRun{Nodes: n, Partition: part}
	var udp []string
	for range n {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return r, nil, err
		}
		udp = append(udp, c.LocalAddr().String())
		c.Close()
	}
	epoch := time.Now().Truncate(time.Second).UTC()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	var dirs []string
	separate := noCluster(part)
	for i := range n {
		dir := filepath.Join(b.tmp, fmt.Sprintf("run%d-node%d", b.seq, i))
		w := b.web
		if separate {
			w = b.separate[i]
		}
		var cf strings.Builder
		fmt.Fprintf(&cf, "seeds = [%s]\ndata_dir = %q\nfetchers = 32\ndns_servers = [%q]\ncontact = \"https://example.org/bench\"\nstatus = \"\"\n",
			quoteStrings(w.seeds), dir, w.dns)
		fmt.Fprintf(&cf, "[politeness]\ndelay = \"10ms\"\n[scope]\nmax_subdomains = 0\n[limits]\nmax_depth = %d\n", b.depth)
		if n > 1 && !separate {
			fmt.Fprintf(&cf, "[cluster]\nphases = %d\nphase_length = %q\nepoch = %s\nsecret_file = %q\npartition = %q\n",
				n, b.phase.String(), epoch.Format(time.RFC3339), b.secret, part)
			for j := range n {
				fmt.Fprintf(&cf, "[[cluster.nodes]]\nid = %d\nudp = %q\n", j, udp[j])
			}
		}
		conf := dir + ".toml"
		if err := os.WriteFile(conf, []byte(cf.String()), 0o644); err != nil {
			return r, nil, err
		}
		args := []string{"run", "--config", conf, "--ca", w.ca}
		if b.logs == "" {
			args = append(args, "--quiet")
		}
		if n > 1 && !separate {
			args = append(args, "--node", fmt.Sprint(i))
		}
		if b.profile != "" {
			args = append(args, "--cpuprofile", fmt.Sprintf("%s-%d-%s-%d.pprof", b.profile, n, part, i))
		}
		cmd := b.command(args)
		if n > 1 {
			// Each node gets its share of the cores, as it would have its
			// own machine: Go's idle threads of n processes spinning on the
			// same cores cost more than the crawl (see README).
			procs := b.procs
			if procs <= 0 {
				procs = max(1, runtime.NumCPU()/n)
			}
			cmd.Env = append(cmd.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
		}
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		cmds, outs, dirs = append(cmds, cmd), append(outs, out), append(dirs, dir)
	}
	var cpu, sys time.Duration
	var ctxsw, faults int64
	wait := func(i int) error {
		c := cmds[i]
		if err := c.Wait(); err != nil {
			return fmt.Errorf("node %d of %d: %v\n%s", i, n, err, outs[i].String())
		}
		own := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		cpu += own
		sys += c.ProcessState.SystemTime()
		r.CPUmsPerNode = append(r.CPUmsPerNode, float64(own.Microseconds())/1000)
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			ctxsw += ru.Nvcsw + ru.Nivcsw
			faults += ru.Minflt
		}
		return nil
	}
	conns0, reqs0 := b.counts()
	start := time.Now()
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			return r, nil, err
		}
		if part == alonePart {
			if err := wait(i); err != nil {
				return r, nil, err
			}
		}
	}
	if part != alonePart {
		for i := range cmds {
			if err := wait(i); err != nil {
				return r, nil, err
			}
		}
	}
	exited := time.Now()
	r.Seconds = exited.Sub(start).Seconds()
	if b.logs != "" {
		for i, out := range outs {
			if err := os.WriteFile(filepath.Join(b.logs, fmt.Sprintf("%d-%d-%s-%d.log", b.seq, n, part, i)), out.Bytes(), 0o644); err != nil {
				return r, nil, err
			}
		}
	}
	conns1, reqs1 := b.counts()
	if last := b.log.last(); last > start.UnixNano() {
		r.TailSeconds = float64(exited.UnixNano()-last) / 1e9
	}
	urls := map[string]bool{}
	var sent, dgrams, bytesOut int
	for i := range n {
		known, errs := countsOfRun(outs[i].String())
		var s, rc, d, by, re, dr, self, of int
		for _, line := range strings.Split(outs[i].String(), "\n") {
			fmt.Sscanf(line, "cluster: node %d of %d: sent %d URLs to peers, received %d; %d datagrams (%d bytes) out, %d retransmitted, %d dropped",
				&self, &of, &s, &rc, &d, &by, &re, &dr)
		}
		got, bytesStored, err := storeFigures(dirs[i])
		if err != nil {
			return r, nil, err
		}
		for u := range got {
			if separate {
				u = fmt.Sprintf("%d %s", i, u) // the webs' names may coincide
			}
			if urls[u] {
				return r, nil, fmt.Errorf("%s stored by two nodes", u)
			}
			urls[u] = true
		}
		r.PagesPerNode = append(r.PagesPerNode, len(got))
		r.URLsPerNode = append(r.URLsPerNode, known)
		r.ErrorsPerNode = append(r.ErrorsPerNode, errs)
		r.BytesPerNode = append(r.BytesPerNode, bytesStored)
		sent, dgrams, bytesOut = sent+s, dgrams+d, bytesOut+by
	}
	r.Pages = len(urls)
	if r.Pages == 0 {
		return r, nil, fmt.Errorf("%d nodes stored nothing:\n%s", n, outs[0].String())
	}
	p := float64(r.Pages)
	r.PagesPerS = p / r.Seconds
	r.CPUmsPerPage = float64(cpu.Microseconds()) / 1000 / p
	r.SysShare = float64(sys) / float64(max(cpu, 1))
	r.CtxSwPerPage, r.FaultsPerPage = float64(ctxsw)/p, float64(faults)/p
	r.URLsPerPage, r.DgramPerPage, r.BytesPerPage = float64(sent)/p, float64(dgrams)/p, float64(bytesOut)/p
	r.ConnsPerPage, r.ReqsPerPage = float64(conns1-conns0)/p, float64(reqs1-reqs0)/p
	most := 0
	for _, c := range r.PagesPerNode {
		most = max(most, c)
	}
	r.Balance = float64(most) / (p / float64(n))
	return r, urls, nil
}

// countsOfRun is the URLs known at the end of a 'kspider run' whose output
// is out and its errors, from its counts line (countsLine), or 0s. It
// reads the URLs off the line's end, so that fields added before them (the
// robots denied too costly to check, since this build) leave them
// readable, and so does a base binary's.
func countsOfRun(out string) (urls, errs int) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "fetched ") {
			continue
		}
		if i := strings.LastIndex(line, ", URLs "); i >= 0 {
			fmt.Sscanf(line[i:], ", URLs %d", &urls)
		}
		if i := strings.Index(line, ", errors "); i >= 0 {
			fmt.Sscanf(line[i:], ", errors %d", &errs)
		}
	}
	return urls, errs
}

// urlsOfRun is countsOfRun's URLs.
func urlsOfRun(out string) int {
	urls, _ := countsOfRun(out)
	return urls
}

func quoteStrings(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func diffCount(a, b map[string]bool) int {
	d := 0
	for u := range a {
		if !b[u] {
			d++
		}
	}
	for u := range b {
		if !a[u] {
			d++
		}
	}
	return d
}

// storeFigures reads the URLs and body bytes of a node's page store.
func storeFigures(dir string) (map[string]bool, int64, error) {
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	got := map[string]bool{}
	var n int64
	err = r.Scan(context.Background(), func(p *storage.Page) error {
		got[p.URL] = true
		n += int64(len(p.Body))
		return nil
	})
	return got, n, err
}
