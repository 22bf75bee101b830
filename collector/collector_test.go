package collector

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
)

// TestPlainWeb fetches every page and resource of a well-behaved web, one
// list per host, with pipelining off and at depth 8, and checks every body
// byte for byte against the web's truth, one connection per host at a time
// and each URL fetched once.
func TestPlainWeb(t *testing.T) {
	for _, depth := range []int{1, 8} {
		t.Run(fmt.Sprintf("pipeline=%d", depth), func(t *testing.T) {
			srv, log, lookup := startWeb(t, testweb.Config{Hosts: 30, Seed: 3, MaxPages: 80, MeanPageSize: 6000, Plain: true}, testweb.ServeConfig{})
			c := newCollector(t, srv, lookup, Config{Pipeline: depth, Fetchers: 8})
			truth := srv.Truth()
			lists := hostLists(truth.Reachable(20, 3000), func(d testweb.Doc) bool {
				return d.Kind == "page" || d.Kind == "resource"
			})
			var wg sync.WaitGroup
			var mu sync.Mutex
			n, pipelined := 0, 0
			for _, urls := range lists {
				wg.Go(func() {
					seen := map[*Result]int{}
					b := c.Fetch(context.Background(), &List{Requests: listOf(urls).Requests, Robots: true, Each: func(r *Result) { seen[r]++ }})
					if len(seen) != len(urls)+1 {
						t.Errorf("%s: Each saw %d results of %d", urls[0], len(seen), len(urls)+1)
					}
					for r, n := range seen {
						if n != 1 {
							t.Errorf("%s: Each called %d times", r.URL, n)
						}
					}
					defer c.Release(b)
					mu.Lock()
					defer mu.Unlock()
					if b.Robots == nil || b.Robots.Status == 0 {
						t.Errorf("%s: no robots.txt result: %+v", urls[0], b.Robots)
					}
					for i := range b.Results {
						r := &b.Results[i]
						want, err := truth.Body(r.URL)
						if err != nil {
							t.Fatal(err)
						}
						if r.Kind != OK || r.Status != 200 || !bytes.Equal(r.Body, want) {
							t.Errorf("%s: kind %s (%v) status %d, %d bytes, want %d", r.URL, r.Kind, r.Err, r.Status, len(r.Body), len(want))
						}
						if !bytes.HasPrefix(r.Head, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(r.Head, []byte("\r\n\r\n")) {
							t.Errorf("%s: head %q", r.URL, r.Head)
						}
						if r.Pipelined {
							pipelined++
						}
						n++
					}
					if b.Connections != 1 {
						t.Errorf("%s: %d connections", urls[0], b.Connections)
					}
				})
			}
			wg.Wait()
			if depth > 1 && pipelined == 0 {
				t.Errorf("nothing was pipelined")
			}
			rep := audit(t, srv, log)
			t.Logf("%d hosts, %d URLs, %d pipelined; audit: %d requests, %d connections, max conns per host %d", len(lists), n, pipelined, rep.Requests, rep.Connections, rep.MaxConnsPerHost)
			if rep.MaxConnsPerHost != 1 || rep.DuplicateFetches != 0 || rep.Connections != len(lists) {
				t.Errorf("audit: max conns per host %d (%s), duplicates %d %v, connections %d for %d hosts",
					rep.MaxConnsPerHost, rep.MaxConnsHost, rep.DuplicateFetches, rep.Duplicates, rep.Connections, len(lists))
			}
		})
	}
}
