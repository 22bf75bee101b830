package storage

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkPipeline measures a page through Put … durable, per codec, and
// the allocations it costs in steady state (b.N pages, one store).
func BenchmarkPipeline(b *testing.B) {
	pages := make([]*Page, 512)
	var raw int64
	for i := range pages {
		pages[i] = testPage(uint64(i))
		raw += int64(len(pages[i].Body))
	}
	for _, codec := range Codecs() {
		b.Run(codec, func(b *testing.B) {
			s, err := Open(Config{Dirs: []string{b.TempDir()}, Codec: codec})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(raw / int64(len(pages)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Re-putting the same pages (re-crawls, as far as the store
				// knows) keeps the benchmark's own allocations out.
				if err := s.Put(context.Background(), pages[i%len(pages)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkScan measures reading pages back with a Scan.
func BenchmarkScan(b *testing.B) {
	for _, codec := range Codecs() {
		b.Run(codec, func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(Config{Dirs: []string{dir}, Codec: codec})
			if err != nil {
				b.Fatal(err)
			}
			var raw int64
			for i := 0; i < 2000; i++ {
				p := testPage(uint64(i))
				raw += int64(len(p.Body))
				if err := s.Put(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			r, err := OpenReader([]string{dir})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(raw)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet measures random Gets: one index lookup and one read each.
func BenchmarkGet(b *testing.B) {
	dirs := []string{b.TempDir(), b.TempDir()}
	s, err := Open(Config{Dirs: dirs})
	if err != nil {
		b.Fatal(err)
	}
	const n = 5000
	for i := uint64(0); i < n; i++ {
		if err := s.Put(context.Background(), testPage(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	r, err := OpenReader(dirs)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Get(uint64(i*7919) % n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexEntry is what the checksums add per record: setting an
// index entry (CRC computed) and looking it up (CRC verified). Compare
// with the microseconds a record takes to compress, store or read.
func BenchmarkIndexEntry(b *testing.B) {
	path := filepath.Join(b.TempDir(), indexName)
	if err := createIndex(path); err != nil {
		b.Fatal(err)
	}
	ix, err := openIndex(path, true)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.close()
	const n = 1 << 16
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		id := uint64(i*7919) % n
		if err := ix.set(id, 1, int64(i)); err != nil {
			b.Fatal(err)
		}
		if _, _, st := ix.lookup(id); st != entrySet {
			b.Fatal("entry does not verify")
		}
	}
}
