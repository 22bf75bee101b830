package collector

import (
	"context"
	"fmt"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
)

// BenchmarkFetch fetches the pages of the largest host of a --plain test
// web served in process, as one list per iteration, pipelining off and at
// depth 8. The server's work is in the figures too: `kspider bench
// collector` measures the client alone, against net/http.
func BenchmarkFetch(b *testing.B) {
	srv, _, lookup := startWeb(b, testweb.Config{Hosts: 4, Seed: 9, MaxPages: 400, Plain: true}, testweb.ServeConfig{})
	lists := hostLists(srv.Truth().Reachable(50, 5000), func(d testweb.Doc) bool { return d.Kind == "page" })
	var urls []string
	for _, l := range lists {
		if len(l) > len(urls) {
			urls = l
		}
	}
	for _, depth := range []int{1, 8} {
		b.Run(fmt.Sprintf("pipeline=%d", depth), func(b *testing.B) {
			c := newCollector(b, srv, lookup, Config{Pipeline: depth})
			l := listOf(urls)
			var bytes int64
			l.Each = func(r *Result) {
				if r.Kind != OK {
					b.Fatalf("%s: %s %v", r.URL, r.Kind, r.Err)
				}
				bytes += int64(len(r.Body))
				c.ReleaseResult(r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c.Fetch(context.Background(), l)
			}
			b.ReportMetric(float64(b.N*len(urls))/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(bytes)/float64(b.N*len(urls)), "bytes/page")
		})
	}
}
