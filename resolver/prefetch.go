package resolver

import (
	"context"
	"sync"
	"sync/atomic"
)

// PrefetchResult counts what one Prefetch did.
type PrefetchResult struct {
	Hosts    int // hosts given
	Cached   int // already in the cache (positively or negatively)
	Resolved int // resolved to addresses
	Failed   int // resolved to an error
}

// Prefetch resolves hosts in the background, PrefetchConcurrency at a time,
// so that the cache is warm when the hosts are needed (the scheduler calls it
// for the hosts of the next phase). The returned channel receives one result
// when all hosts are done or ctx is cancelled. hosts must not be modified
// until then.
func (r *Resolver) Prefetch(ctx context.Context, hosts []string) <-chan PrefetchResult {
	done := make(chan PrefetchResult, 1)
	go func() {
		var next atomic.Int64
		var cached, resolved, failed atomic.Int64
		var wg sync.WaitGroup
		for range min(r.cfg.PrefetchConcurrency, len(hosts)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(next.Add(1) - 1)
					if i >= len(hosts) {
						return
					}
					if _, ok, _ := r.AppendCached(nil, hosts[i]); ok {
						cached.Add(1)
						continue
					}
					if _, err := r.Lookup(ctx, hosts[i]); err != nil {
						failed.Add(1)
					} else {
						resolved.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		done <- PrefetchResult{Hosts: len(hosts), Cached: int(cached.Load()), Resolved: int(resolved.Load()), Failed: int(failed.Load())}
	}()
	return done
}
