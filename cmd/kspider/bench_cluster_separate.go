package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/tools/testweb"
)

// separatePart is the pseudo-partition of `bench cluster --partitions`
// that crawls with n independent nodes and no cluster: the floor of the
// cluster's CPU ratio on this machine. Each node is a plain `kspider run`
// (no [cluster] block, no communicator, no phases) crawling a test web of
// its own with a quarter of the hosts (for n = 4), the webs sized so that
// together they hold about as many crawlable pages as the cluster's web.
// Whatever the n processes cost per page above the one node then is the
// price of n lightly loaded processes sharing this machine's cores (their
// starts, their heaps' first touches, the Go runtime's wake-ups of each),
// not of anything the cluster does.
const separatePart = "separate"

// alonePart is the pseudo-partition that crawls separatePart's webs with
// the same nodes one after another, each with the machine to itself but
// for the web: what the n processes cost per page when none of them
// shares the cores with another, as on machines of their own. Its ratio
// against separatePart's is the price of running the n processes on this
// machine at once (the kernel switching between them, their caches), a
// price that a cluster of separate machines does not pay.
const alonePart = "alone"

// noCluster reports whether part is one of the pseudo-partitions whose
// nodes form no cluster and crawl the webs of startSeparate.
func noCluster(part string) bool { return part == separatePart || part == alonePart }

// startSeparate starts n webs of web.Hosts/n hosts each, seeded 100+i,
// their largest host's page count chosen (by bisection on the webs'
// ground truth) so that their crawlable pages together come closest to
// web's. It returns the webs and their servers, which the caller closes
// (those started before an error too).
func startSeparate(ctx context.Context, web testweb.Config, n, depth int, tmp string, log *logCounter) ([]clusterWeb, []*testweb.Server, error) {
	agent := robots.ProductToken(spider.DefaultUserAgent)
	crawlable := func(c testweb.Config) int {
		return len(testweb.Generate(c).Truth(testweb.Ports{}).Crawlable(agent, depth, 0))
	}
	part := func(i, maxPages int) testweb.Config {
		c := web
		c.Hosts, c.Seed, c.Seeds, c.MaxPages = max(1, web.Hosts/n), int64(100+i), max(1, web.Seeds/n), maxPages
		return c
	}
	total := func(maxPages int) int {
		t := 0
		for i := range n {
			t += crawlable(part(i, maxPages))
		}
		return t
	}
	want := crawlable(web)
	lo, hi := max(web.MinPages, 2), max(web.MaxPages, 2)
	for lo < hi {
		mid := (lo + hi) / 2
		if total(mid) < want {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > 2 && want-total(lo-1) < total(lo)-want {
		lo--
	}
	var webs []clusterWeb
	var servers []*testweb.Server
	for i := range n {
		srv, w, err := startClusterWeb(ctx, part(i, lo), filepath.Join(tmp, fmt.Sprintf("ca-separate-%d.pem", i)), log.source())
		if srv != nil {
			servers = append(servers, srv)
		}
		if err != nil {
			return nil, servers, err
		}
		webs = append(webs, w)
	}
	return webs, servers, nil
}
