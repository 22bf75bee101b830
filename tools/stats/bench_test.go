package stats

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats/storetest"
)

// BenchmarkStatsPostgresDoc scans LZO stores of the postgresql-doc-15 HTML,
// on one and on two directories. "scan" is the baseline: storage's Scan
// reading and decompressing, nothing counted. "callback" counts on the
// scan's own goroutines (one per directory); "addall" hands pages to
// GOMAXPROCS workers, as kspider stats does; "nolinks" leaves link
// extraction out. MB/s are raw page bytes.
func BenchmarkStatsPostgresDoc(b *testing.B) {
	pages := storetest.DocPages(b)
	var raw int64
	for _, p := range pages {
		raw += int64(len(p.Header) + len(p.Body))
	}
	open := func(dirs []string) *storage.Reader {
		storetest.Build(b, dirs, "lzo", pages)
		r, err := storage.OpenReader(dirs)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r
	}
	stores := []struct {
		name string
		r    *storage.Reader
	}{
		{"1dir", open([]string{b.TempDir()})},
		{"2dirs", open([]string{b.TempDir(), b.TempDir()})},
	}
	callback := func(b *testing.B, r *storage.Reader, newFn func() func(*storage.Page)) {
		b.SetBytes(raw)
		b.ReportAllocs()
		for b.Loop() {
			fn := newFn()
			if err := r.Scan(context.Background(), func(p *storage.Page) error {
				fn(p)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, s := range stores {
		b.Run("scan-"+s.name, func(b *testing.B) {
			callback(b, s.r, func() func(*storage.Page) {
				var n atomic.Int64
				return func(p *storage.Page) { n.Add(int64(len(p.Body))) }
			})
		})
		b.Run("nolinks-"+s.name, func(b *testing.B) {
			callback(b, s.r, func() func(*storage.Page) { return New(Options{}).Add })
		})
		b.Run("callback-"+s.name, func(b *testing.B) {
			callback(b, s.r, func() func(*storage.Page) { return New(Options{NewLinkFunc: CrawlerLinks}).Add })
		})
		b.Run("addall-"+s.name, func(b *testing.B) {
			b.SetBytes(raw)
			b.ReportAllocs()
			for b.Loop() {
				c := New(Options{NewLinkFunc: CrawlerLinks})
				if err := c.AddAll(context.Background(), s.r, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
