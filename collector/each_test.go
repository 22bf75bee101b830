package collector

import (
	"context"
	"sync"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
)

// TestEachReleaseResult: a caller that releases every result in Each (as
// the node does) and then the batch gives every buffer back exactly once:
// Release skips the results ReleaseResult emptied, so nothing is put back
// twice (lent would go below zero, and a buffer would sit twice in the
// pool, lent to two results at once) and nothing is kept (lent above
// zero). Half the lists are cancelled from inside Each after their third
// result, so results also end in the fetcher's final sweep; one in four
// releases its results only with the batch.
func TestEachReleaseResult(t *testing.T) {
	srv, _, lookup := startWeb(t, testweb.Config{Hosts: 12, Seed: 5, MaxPages: 60, MeanPageSize: 20000, Plain: true}, testweb.ServeConfig{})
	c := newCollector(t, srv, lookup, Config{Pipeline: 4, Fetchers: 4})
	lists := hostLists(srv.Truth().Reachable(20, 3000), func(d testweb.Doc) bool { return d.Kind == "page" })
	var wg sync.WaitGroup
	k := 0
	for _, urls := range lists {
		k++
		cancelAt, inEach := 0, k%4 != 0
		if k%2 == 0 {
			cancelAt = 3
		}
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := 0
			each := func(r *Result) {
				if seen++; seen == cancelAt {
					cancel() // the rest arrive after the list's context is done
				}
				if inEach {
					c.ReleaseResult(r)
					if r.Head != nil || r.WireBody != nil || r.Body != nil {
						t.Errorf("%s: buffers still set after ReleaseResult", r.URL)
					}
				}
			}
			b := c.Fetch(ctx, &List{Requests: listOf(urls).Requests, Robots: true, Each: each})
			if seen != len(urls)+1 {
				t.Errorf("%s: Each saw %d results of %d", urls[0], seen, len(urls)+1)
			}
			c.Release(b)
			c.Release(b) // a second Release is a no-op too
		})
	}
	wg.Wait()
	lent, most := c.PoolLent()
	if lent != 0 {
		t.Errorf("%d bytes lent after every batch was released (most %d)", lent, most)
	}
	c.bufs.mu.Lock()
	defer c.bufs.mu.Unlock()
	in := map[*[]byte]bool{}
	for _, cl := range c.bufs.classes {
		for _, b := range cl {
			if in[b] {
				t.Fatalf("buffer %p is in the pool twice", b)
			}
			in[b] = true
		}
	}
	t.Logf("%d lists, %d buffers kept, most lent %d bytes", len(lists), len(in), most)
}
