package spider

import (
	"bytes"
	"context"
	"flag"
	"net/url"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/spider/urlnorm"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testweb"
)

var nodeLong = flag.Bool("node.long", false, "run the node's end-to-end and kill -9 tests on 10,000 hosts instead of 1,000")

// TestNodeThousandHosts crawls a 1,000-host test web, hostile hosts
// included, to the end with the node and the default trap filters: every
// crawlable page is stored exactly once with the bytes the web serves, no
// page over its host's budget, nothing robots.txt forbids fetched, no
// duplicate fetch, one connection per host at a time, the delay (or the
// host's Crawl-delay) between a host's lists, and the crawl ends by itself.
func TestNodeThousandHosts(t *testing.T) {
	webCfg := testweb.Config{Hosts: 1000, Seed: 29, MaxPages: 6, MeanPageSize: 2000, Seeds: 60}
	if *nodeLong {
		webCfg.Hosts, webCfg.MaxPages, webCfg.Seeds = 10000, 10, 200
	}
	var log bytes.Buffer
	srv, lookup := startWeb(t, webCfg, &log)
	const depth, budget = 4, 40
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	// Thousands of hostile hosts: too many lines to print; the failed
	// fetches are kept, to excuse their retries in the politeness check.
	var mu sync.Mutex
	retried := map[string]int{}
	cfg.Logf = retryLog(&mu, retried)
	traps := scope.Default()
	traps.MaxPagesPerHost = budget
	cfg.Scope = &traps
	cfg.Collector.Fetchers = 64
	cfg.Collector.MaxBody = 1 << 20
	cfg.Collector.FirstByte, cfg.Collector.ResponseTimeout = 2*time.Second, 4*time.Second
	cfg.Scheduler.MaxRetryAfter, cfg.Scheduler.MaxBackoff = time.Second, 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum, err := runNode(t, ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *sum)
	if !sum.Finished {
		t.Error("the crawl did not finish by itself")
	}

	truth := srv.Truth()
	web := testweb.Generate(webCfg)
	want := map[string]testweb.Doc{}
	for _, d := range truth.Crawlable(robots.ProductToken(DefaultUserAgent), depth, 0) {
		if d.Kind == "trap" || d.Kind == "dns-failure" {
			continue
		}
		if c, err := urlnorm.Canonical(nil, d.URL, nil); err == nil {
			want[c] = d
		}
	}
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]bool{}
	perHost := map[string]int{}
	compared := 0
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		if got[p.URL] {
			t.Errorf("stored twice: %s", p.URL)
		}
		got[p.URL] = true
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Errorf("stored URL %q: %v", p.URL, err)
			return nil
		}
		perHost[u.Scheme+"://"+u.Host]++
		d, ok := want[p.URL]
		h, _ := web.Host(u.Hostname())
		if !ok || p.Status != 200 || h == nil || h.Behaviour != testweb.BehaviourNormal {
			return nil // only well-behaved answers have a content to compare
		}
		hdr, err := p.ParseHeader()
		if err != nil {
			t.Errorf("%s: header: %v", p.URL, err)
			return nil
		}
		body, err := collector.DecodeBody(hdr.Get("Content-Encoding"), p.Body, maxReexpandBody)
		if err != nil {
			t.Errorf("%s: body: %v", p.URL, err)
			return nil
		}
		wantBody, err := truth.Body(d.URL)
		if err != nil {
			t.Errorf("%s: the truth has no body: %v", p.URL, err)
			return nil
		}
		if !bytes.Equal(body, wantBody) {
			t.Errorf("%s: stored %d bytes that differ from the web's %d", p.URL, len(body), len(wantBody))
		}
		compared++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for u, d := range want {
		if !got[u] {
			missing = append(missing, u+" ("+d.Kind+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d crawlable URLs not stored: %v", len(missing), len(want), head(missing, 10))
	}
	for h, n := range perHost {
		if n > budget {
			t.Errorf("%s: %d pages stored, over its budget of %d", h, n, budget)
		}
	}
	t.Logf("%d hosts with pages, %d pages, %d compared with the web's bytes", len(perHost), len(got), compared)
	checkGaps(t, checkPoliteExcused(t, srv, &log, retried), web, cfg.Scheduler.MinDelay, crawlDelayCap)
}
