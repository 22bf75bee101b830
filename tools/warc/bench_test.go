package warc

import (
	"fmt"
	"testing"

	"github.com/kspider/kspider/tools/stats/storetest"
)

// BenchmarkEncodeResponse encodes the postgresql-doc-15 pages as response
// records on one goroutine: gzip is nearly all of the cost. MB/s are raw
// page bytes; warc/raw is the size of the output.
func BenchmarkEncodeResponse(b *testing.B) {
	pages := storetest.DocPages(b)
	var raw int64
	for _, p := range pages {
		raw += int64(len(p.Header) + len(p.Body))
	}
	for _, level := range []int{1, 3, -1, 9} {
		b.Run(fmt.Sprintf("level%d", level), func(b *testing.B) {
			enc, err := NewEncoderLevel(level)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(raw)
			var out int64
			for b.Loop() {
				out = 0
				for _, p := range pages {
					m, _, err := enc.Response(p, "")
					if err != nil {
						b.Fatal(err)
					}
					out += int64(len(m))
				}
			}
			b.ReportMetric(float64(out)/float64(raw), "warc/raw")
		})
	}
}
