package spider

// DNS prefetch before the swap (issue 16): shortly before a slot ends, a
// cluster node resolves, through its caching resolver (NodeConfig.Lookup),
// the hosts the scheduler will hand out first in its next slot, so that
// the slot's first lists do not wait for DNS. Bounded in count
// (NodeCluster.PrefetchHosts) and time (lookups still running when the
// next slot's fetches may start are cancelled).

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/scheduler"
)

// prefetchConcurrency is how many prefetch lookups run at once: enough to
// resolve a few hundred names in well under a second from a nearby server,
// few enough not to crowd the fetchers' own lookups.
const prefetchConcurrency = 8

// prefetchScan bounds the ids the scheduler looks at to find the hosts.
const prefetchScan = 1 << 16

// prefetchKey marks the context of a prefetch lookup (tests tell them from
// the fetchers' lookups by it).
type prefetchKey struct{}

// prefetchStats are the prefetch counters.
type prefetchStats struct {
	rounds, resolved, failed, late atomic.Uint64
}

// prefetchLead is how long before a slot's end the next slot's hosts are
// resolved: a fifth of the slot, at least 100 ms, at most 10 s.
func prefetchLead(length time.Duration) time.Duration {
	return min(max(length/5, 100*time.Millisecond), 10*time.Second)
}

// prefetchLoop runs for the node's crawl (ctx): once per slot, prefetchLead
// before its end, it resolves the next slot's first hosts.
func (c *nodeCluster) prefetchLoop(ctx context.Context, src scheduler.PhaseSource) {
	if c.cfg.PrefetchHosts < 0 || c.n.cfg.Lookup == nil || c.n.cfg.Scheduler.Phases < 2 {
		return
	}
	limit := c.cfg.PrefetchHosts
	if limit == 0 {
		limit = 256
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	done := int64(-1 << 62) // the last slot prefetched for
	for {
		p := src.Phase()
		if p.End.IsZero() {
			return
		}
		at := p.End.Add(-prefetchLead(p.End.Sub(p.Start)))
		wait := at.Sub(p.Now)
		if wait <= 0 && p.Slot == done {
			wait = p.End.Sub(p.Now) // this slot's done: wait for the next
		}
		if wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		done = p.Slot
		if p.Active < 0 {
			continue
		}
		next := (p.Active + 1) % c.n.cfg.Scheduler.Phases
		// The next slot's fetches may start at its guard's end: a lookup
		// not done by then is no longer ahead of them.
		c.prefetch(ctx, next, limit, p.End.Add(p.Guard))
	}
}

// prefetch resolves up to limit hosts of phase ph by deadline.
func (c *nodeCluster) prefetch(ctx context.Context, ph, limit int, deadline time.Time) {
	names := c.n.sched.PhaseHosts(ph, limit, prefetchScan)
	hosts := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		h := hostName(name)
		if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			continue // an address needs no DNS
		}
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	c.pf.rounds.Add(1)
	if len(hosts) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.WithValue(ctx, prefetchKey{}, true), deadline)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(prefetchConcurrency, len(hosts)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(hosts) || ctx.Err() != nil {
					return
				}
				_, err := c.n.cfg.Lookup(ctx, hosts[i])
				switch {
				case err == nil:
					c.pf.resolved.Add(1)
				case ctx.Err() != nil:
					c.pf.late.Add(1)
				default:
					c.pf.failed.Add(1) // a failure is cached too: the fetch fails fast
				}
			}
		})
	}
	wg.Wait()
	if f := c.cfg.onPrefetch; f != nil {
		f(ph, hosts, deadline)
	}
}
