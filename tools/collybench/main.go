// Command collybench crawls a web with github.com/gocolly/colly/v2, the Go
// crawler people use today, and prints what it cost, so `kspider bench
// crawl` can set kspider's figures beside colly's on the same pages. It is a
// module of its own so colly never enters kspider's go.mod:
//
//	cd tools/collybench && go run . --dns 127.0.0.1:5353 --json http://www.pgdocs1.ac.th:8080/
//
// The crawl is colly's queue mode with --threads consumer threads (16), its
// default net/http client (keep-alive, any number of connections per host)
// and the page scope of kspider's crawl benchmark: links to the seeds' hosts
// whose path ends in ".html" or "/", without a query; fragments removed.
// Each URL is queued once (colly would also refuse a revisit, but the queue
// would hold every sighting). Robots.txt is obeyed unless --robots=false.
//
// Figures: pages (responses), bytes (bodies), seconds, pages/s, MB/s, CPU
// milliseconds per page (user+system of this process, colly's own process)
// and peak RSS (getrusage).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/gocolly/colly/v2/queue"
)

// Config is one benchmark crawl.
type Config struct {
	Seeds     []string
	Threads   int    // queue consumers
	DNS       string // "host:port" of the DNS server for every name; "" for the system's
	Robots    bool   // obey robots.txt
	UserAgent string
	MaxPages  int // stop queueing after this many URLs; 0: no limit
}

// Result is what a crawl cost.
type Result struct {
	Pages        int64   `json:"pages"`
	Bytes        int64   `json:"bytes"`
	Errors       int64   `json:"errors"`
	Seconds      float64 `json:"seconds"`
	PagesPerS    float64 `json:"pages_per_s"`
	MBPerS       float64 `json:"mb_per_s"`
	CPUMsPerPage float64 `json:"cpu_ms_per_page"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	Threads      int     `json:"threads"`
	Colly        string  `json:"colly"`
}

// inScope is the benchmark's page scope on a URL's path.
var inScope = regexp.MustCompile(`^https?://[^/?#]+(/[^?#]*)?(\.html|/)$`)

// Crawl runs one crawl to the end.
func Crawl(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Seeds) == 0 {
		return Result{}, errors.New("no seeds")
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 16
	}
	var hosts []string
	for _, s := range cfg.Seeds {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Result{}, fmt.Errorf("seed %q is not an http(s) URL", s)
		}
		hosts = append(hosts, u.Hostname())
	}
	opts := []colly.CollectorOption{colly.AllowedDomains(hosts...), colly.URLFilters(inScope)}
	if cfg.UserAgent != "" {
		opts = append(opts, colly.UserAgent(cfg.UserAgent))
	}
	c := colly.NewCollector(opts...)
	c.IgnoreRobotsTxt = !cfg.Robots
	c.WithTransport(transport(cfg.DNS))

	q, err := queue.New(cfg.Threads, &queue.InMemoryQueueStorage{MaxSize: 1 << 30})
	if err != nil {
		return Result{}, err
	}
	var res Result
	var pages, bytes, errs atomic.Int64
	var seen sync.Map
	var queued atomic.Int64
	add := func(u string) {
		if cfg.MaxPages > 0 && queued.Load() >= int64(cfg.MaxPages) {
			return
		}
		if _, dup := seen.LoadOrStore(u, struct{}{}); dup {
			return
		}
		queued.Add(1)
		q.AddURL(u)
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		u := e.Request.AbsoluteURL(e.Attr("href"))
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		if u != "" && inScope.MatchString(u) {
			add(u)
		}
	})
	c.OnResponse(func(r *colly.Response) {
		pages.Add(1)
		bytes.Add(int64(len(r.Body)))
	})
	c.OnError(func(r *colly.Response, err error) { errs.Add(1) })
	for _, s := range cfg.Seeds {
		add(s)
	}
	cpu0 := cpuTime()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- q.Run(c) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		q.Stop()
		<-done
		err = ctx.Err()
	}
	secs := time.Since(start).Seconds()
	cpu := cpuTime() - cpu0
	res = Result{Pages: pages.Load(), Bytes: bytes.Load(), Errors: errs.Load(), Seconds: secs,
		Threads: cfg.Threads, Colly: "v2.3.0", PeakRSSMB: peakRSSMB()}
	if secs > 0 {
		res.PagesPerS = float64(res.Pages) / secs
		res.MBPerS = float64(res.Bytes) / 1e6 / secs
	}
	if res.Pages > 0 {
		res.CPUMsPerPage = float64(cpu.Microseconds()) / 1e3 / float64(res.Pages)
	}
	return res, err
}

// transport is net/http's default transport, resolving every name through
// dns when given.
func transport(dns string) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if dns != "" {
		d := &net.Dialer{Timeout: 10 * time.Second, Resolver: &net.Resolver{
			PreferGo: true,
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, dns)
			},
		}}
		t.DialContext = d.DialContext
	}
	t.MaxIdleConnsPerHost = 64
	return t
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // kilobytes on Linux
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	threads := fs.Int("threads", 16, "queue consumer threads")
	dns := fs.String("dns", "", "DNS server `host:port` for every name (default: the system's)")
	robots := fs.Bool("robots", true, "obey robots.txt")
	ua := fs.String("user-agent", "", "User-Agent (default: colly's)")
	maxPages := fs.Int("max-pages", 0, "queue at most this many URLs (0: no limit)")
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: collybench [flags] SEED_URL...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	res, err := Crawl(ctx, Config{Seeds: fs.Args(), Threads: *threads, DNS: *dns, Robots: *robots, UserAgent: *ua, MaxPages: *maxPages})
	if err != nil {
		fmt.Fprintf(stderr, "collybench: %v\n", err)
		return 1
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
		return 0
	}
	fmt.Fprintf(stdout, "colly %s, %d threads: %d pages, %.1f MB in %.2fs: %.0f pages/s, %.1f MB/s, %.3f CPU ms/page, peak RSS %.0f MB, %d errors\n",
		res.Colly, res.Threads, res.Pages, float64(res.Bytes)/1e6, res.Seconds, res.PagesPerS, res.MBPerS, res.CPUMsPerPage, res.PeakRSSMB, res.Errors)
	return 0
}
