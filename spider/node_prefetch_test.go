package spider

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterDNSPrefetch: before each slot begins, a cluster node has
// resolved into its caching resolver the hosts its next slot starts with
// (a real DNS server on loopback, the test web's); the fetchers' first
// lookups of those hosts are cache hits; the status page counts them.
func TestClusterDNSPrefetch(t *testing.T) {
	var log bytes.Buffer
	srv, res := startWebResolver(t, testweb.Config{Hosts: 60, Seed: 11, MaxPages: 8, MeanPageSize: 2000, Seeds: 12, Plain: true}, &log)
	type lookup struct {
		at     time.Time
		cached bool
	}
	var mu sync.Mutex
	fetched := map[string][]lookup{} // the fetchers' lookups by host
	prefetched := map[string]time.Time{}
	inTime, rounds := 0, 0
	look := func(ctx context.Context, host string) ([]netip.Addr, error) {
		if ctx.Value(prefetchKey{}) == nil {
			_, cached, _ := res.AppendCached(nil, host)
			mu.Lock()
			fetched[host] = append(fetched[host], lookup{time.Now(), cached})
			mu.Unlock()
		}
		return res.Lookup(ctx, host)
	}
	// One node, two phases: it works on phase t mod 2 in slot t, so every
	// second slot starts with hosts it has not fetched from yet.
	const slot = 2 * time.Second
	cfg := clusterNodes(t, 1, srv, look, 2, slot, cluster.ByHost)[0]
	cc := &cfg.Cluster.Config
	cc.Phases, cfg.Scheduler.Phases = 2, 2
	if err := cc.Check(); err != nil {
		t.Fatal(err)
	}
	cfg.Scheduler.Clock = cluster.SystemClock(cc.Schedule(), 0, slot/10, nil)
	cfg.Cluster.onPrefetch = func(ph int, hosts []string, deadline time.Time) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		rounds++
		if len(hosts) == 0 || !now.Before(deadline) {
			return // nothing to do, or cut off by the slot's start (counted late)
		}
		inTime++
		for _, h := range hosts {
			if _, ok, _ := res.AppendCached(nil, h); !ok {
				t.Errorf("phase %d: %s prefetched but not in the resolver's cache %v before its slot", ph, h, deadline.Sub(now))
			}
			if _, seen := prefetched[h]; !seen {
				prefetched[h] = now
			}
		}
	}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := n.Run(ctx)
	st := n.Status()
	cs := n.ClusterStats()
	if cerr := n.Close(); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; prefetch rounds %d (%d in time with hosts), resolved %d, failed %d, late %d", *sum, cs.PrefetchRounds, inTime,
		cs.Prefetched, cs.PrefetchFailed, cs.PrefetchLate)
	mu.Lock()
	defer mu.Unlock()
	if inTime == 0 || len(prefetched) == 0 {
		t.Fatalf("no prefetch round with hosts finished before its slot (%d rounds)", rounds)
	}
	if st.DNS.Prefetched != cs.Prefetched || st.DNS.Prefetched < uint64(len(prefetched)) {
		t.Errorf("status dns.prefetched %d, cluster stats %d, hosts prefetched in time %d", st.DNS.Prefetched, cs.Prefetched, len(prefetched))
	}
	// The fetchers' first lookup of a prefetched host after its prefetch
	// found it cached (every TTL of the test web is >= 60 s).
	hits, misses := 0, 0
	for h, at := range prefetched {
		for _, l := range fetched[h] {
			if l.at.After(at) {
				if l.cached {
					hits++
				} else {
					misses++
					t.Errorf("%s: prefetched at %v, looked up %v later by a fetcher: not cached", h, at.Format(time.StampMilli), l.at.Sub(at))
				}
				break
			}
		}
	}
	if hits == 0 {
		t.Errorf("no fetcher looked up a prefetched host after its prefetch (%d hosts prefetched)", len(prefetched))
	}
	t.Logf("%d hosts prefetched in time; fetchers' first lookups after it: %d cached, %d not", len(prefetched), hits, misses)
}
