package spider

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterEndsOnEvents: with the coordinator's fallback timer an hour
// long, the crawl still ends, on events alone (node_cluster_end.go): node
// 0 turning idle, a peer telling it it turned idle after answering busy
// (acknowledgements awaited first), the confirming round right after one
// that found every node idle.
func TestClusterEndsOnEvents(t *testing.T) {
	for _, by := range []cluster.Partition{cluster.ByURL, cluster.ByHost} {
		t.Run(by.String(), func(t *testing.T) {
			srv, lookup := startWeb(t, testweb.Config{Hosts: 30, Seed: 11, MaxPages: 20, MeanPageSize: 2000, Seeds: 3, Plain: true}, &bytes.Buffer{})
			const depth = 3
			cfgs := clusterNodes(t, 3, srv, lookup, depth, time.Second, by)
			for i := range cfgs {
				cfgs[i].Cluster.RoundEvery = time.Hour
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			runCluster(t, ctx, cfgs)
			if ctx.Err() != nil {
				t.Fatalf("the crawl did not end on events (%v)", time.Since(start))
			}
			union := map[string]bool{}
			for _, cfg := range cfgs {
				for u := range storedURLs(t, cfg.Dir) {
					union[u] = true
				}
			}
			compareSets(t, union, truthURLs(t, srv, depth))
		})
	}
}
