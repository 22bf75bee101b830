package status

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/tools/testweb"
)

// benchCrawl crawls web from scratch into a new directory, with a status
// server polled (/status and /metrics) every `every` when every > 0, and
// returns pages stored per second and the number of polls.
func benchCrawl(b *testing.B, srv *testweb.Server, every time.Duration) (float64, int) {
	// A resolver of its own: every crawl starts with a cold DNS cache.
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 2 * time.Second, Network: "ip4"})
	if err != nil {
		b.Fatal(err)
	}
	defer res.Close()
	noTraps := scope.Config{}
	n, err := spider.OpenNode(spider.NodeConfig{Dir: b.TempDir(), Seeds: srv.SeedURLs(), MaxDepth: 6, Scope: &noTraps,
		Lookup:    func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
		RootCAs:   srv.CertPool(),
		Collector: collector.Config{Fetchers: 64, ConnectTimeout: 5 * time.Second, FirstByte: 5 * time.Second, ResponseTimeout: 10 * time.Second},
		Scheduler: scheduler.Config{PartialWait: 20 * time.Millisecond, Window: 1 << 16, Columns: 101},
		DNSStats:  res.Stats,
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer((&Server{Node: n, Control: n, Token: "bench-token-0123456789"}).Handler())
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	polls := 0
	stop := make(chan struct{})
	pollerDone := make(chan struct{})
	go func() {
		defer close(pollerDone)
		if every <= 0 {
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for _, p := range []string{"/status", "/metrics", "/"} {
				resp, err := http.Get(hs.URL + p)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			polls++
		}
	}()
	start := time.Now()
	sum, err := n.Run(ctx)
	el := time.Since(start)
	close(stop)
	<-pollerDone
	if cerr := n.Close(); err != nil || cerr != nil {
		b.Fatal(err, cerr)
	}
	return float64(sum.Stored) / el.Seconds(), polls
}

// benchWeb serves a test web on loopback with a resolver for it.
func benchWeb(b *testing.B, cfg testweb.Config) (*testweb.Server, *resolver.Resolver) {
	srv, err := testweb.Start(context.Background(), testweb.Generate(cfg), testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 500 * time.Millisecond, Network: "ip4"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { res.Close() })
	return srv, res
}

// BenchmarkCrawlWithPoller compares a crawl of a test web with and without
// a poller of /status, /metrics and / (every second, and every 10 ms to
// magnify the cost), alternating runs in one process so that the machine's
// load is shared alike. Run with -benchtime 1x; it reports pages/s of each
// and the ratio with/without.
func BenchmarkCrawlWithPoller(b *testing.B) {
	srv, _ := benchWeb(b, testweb.Config{Hosts: 1500, Seed: 3, MaxPages: 60, MeanPageSize: 4000, Seeds: 40, Plain: true})
	const rounds = 6
	var sum [3]float64 // pages/s without poller, polled every 1 s, every 10 ms
	every := [3]time.Duration{0, time.Second, 10 * time.Millisecond}
	for i := 0; i < b.N*rounds; i++ {
		var pps [3]float64
		polls := 0
		for k := range 3 { // the order turns each round: no variant always goes first
			v := (i + k) % 3
			var p int
			pps[v], p = benchCrawl(b, srv, every[v])
			polls = max(polls, p)
			sum[v] += pps[v]
		}
		b.Logf("round %d: %.0f pages/s without poller, %.0f polled every 1 s, %.0f polled every 10 ms (%d polls)", i, pps[0], pps[1], pps[2], polls)
	}
	base, sec, fast := sum[0], sum[1], sum[2]
	b.ReportMetric(base/float64(b.N*rounds), "pages/s")
	b.ReportMetric(sec/base, "ratio_1s")
	b.ReportMetric(fast/base, "ratio_10ms")
}

// BenchmarkScrape is the cost of one /status, /metrics or / on a node
// that has crawled a small web (its scheduler and counters populated).
func BenchmarkScrape(b *testing.B) {
	ctx := context.Background()
	srv, res := benchWeb(b, testweb.Config{Hosts: 50, Seed: 3, MaxPages: 20, Seeds: 5, Plain: true})
	noTraps := scope.Config{}
	n, err := spider.OpenNode(spider.NodeConfig{Dir: b.TempDir(), Seeds: srv.SeedURLs(), MaxDepth: 2, Scope: &noTraps,
		Lookup:  func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
		RootCAs: srv.CertPool(), Scheduler: scheduler.Config{PartialWait: 20 * time.Millisecond}})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	if _, err := n.Run(ctx); err != nil {
		b.Fatal(err)
	}
	h := (&Server{Node: n}).Handler()
	for _, p := range []string{"/status", "/metrics", "/"} {
		b.Run(p, func(b *testing.B) {
			req := httptest.NewRequest("GET", p, nil)
			for range b.N {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
