package spider

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/tools/testweb"
)

// TestNodeBudgetsSurviveRestart: the per-host page budget and the
// per-domain host budget hold across a restart (they live in the
// scheduler's host table, not in memory).
func TestNodeBudgetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	sc := scope.Config{MaxPagesPerHost: 2, MaxSubdomains: 2}
	cfg := NodeConfig{Dir: dir, Scope: &sc,
		Collector: collector.Config{Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, nil }}}
	check := func(n *Node, u string, want scope.Reason) {
		t.Helper()
		if got := n.spend(u); got != want {
			t.Errorf("spend(%s) = %v, want %v", u, got, want)
		}
	}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(n, "http://a.example.com/1", scope.OK)
	check(n, "http://a.example.com/2", scope.OK)
	check(n, "http://a.example.com/3", scope.HostBudget)
	check(n, "https://b.example.com:8443/", scope.OK)
	check(n, "http://c.example.com/", scope.TooManySubdomains)
	check(n, "http://other.org/", scope.OK)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err = OpenNode(cfg); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	check(n, "http://a.example.com/4", scope.HostBudget)
	check(n, "http://d.example.com/", scope.TooManySubdomains)
	check(n, "https://b.example.com:8443/2", scope.OK)
	check(n, "https://b.example.com:8443/3", scope.HostBudget)
	check(n, "http://other.org/2", scope.OK)
	for key, want := range map[string]string{"a.b:80": "a.b", "https:a.b": "a.b", "https:[::1]:8443": "[::1]", "[::1]": "[::1]"} {
		if got := hostName(key); got != want {
			t.Errorf("hostName(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestNodeMaxPages: limits.max_pages and max_pages_per_host over a stop
// and two restarts: exactly max_pages pages stored, at most the budget per
// host, and a run on a directory at its limit fetches nothing.
func TestNodeMaxPages(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 20, Seed: 17, MaxPages: 40, MeanPageSize: 2000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, 3)
	cfg.Scope.MaxPagesPerHost = 5
	cfg.MaxPages = 30

	sum1, err := runNodeUntil(t, cfg, 8)
	if err != nil && !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	sum2, err := runNode(t, ctx2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !sum2.Finished || !sum2.LimitReached {
		t.Errorf("second run: %+v, want finished at the limit", *sum2)
	}
	sum3, err := runNode(t, ctx2, cfg)
	if err != nil || !sum3.Finished || !sum3.LimitReached || sum3.Fetched != 0 {
		t.Errorf("run at the limit: %+v, %v; want nothing fetched", *sum3, err)
	}
	got := storedURLs(t, dir)
	if len(got) != 30 || sum1.Stored+sum2.Stored != 30 {
		t.Errorf("stored %d pages (runs: %d + %d), want max_pages 30", len(got), sum1.Stored, sum2.Stored)
	}
	perHost := map[string]int{}
	for u := range got {
		p, _ := url.Parse(u)
		perHost[p.Scheme+"://"+p.Host]++
	}
	for h, c := range perHost {
		if c > 5 {
			t.Errorf("%d pages of %s, over max_pages_per_host 5", c, h)
		}
	}
	checkPoliteAcross(t, srv, &log, true)
}
