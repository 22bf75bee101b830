package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenDamagedStore opens a directory whose segment and index files are
// the fuzzer's bytes, with a Reader (Get, Scan) and with a writer's
// recovery. Nothing may panic; whatever the writer recovers must then scan
// without error. Every run syncs files, so run it with a bounded
// minimisation: go test -run '^$' -fuzz FuzzOpenDamagedStore -fuzzminimizetime 20x.
func FuzzOpenDamagedStore(f *testing.F) {
	src := f.TempDir()
	for _, codec := range []string{"lzo", "s2", "zstd", "none"} {
		dir := filepath.Join(src, codec)
		s, err := Open(Config{Dirs: []string{dir}, Codec: codec})
		if err != nil {
			f.Fatal(err)
		}
		for id := uint64(0); id < 4; id++ {
			p := testPage(id)
			p.Body = p.Body[:min(len(p.Body), 300)] // small seeds fuzz and minimise faster
			if err := s.Put(context.Background(), p); err != nil {
				f.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			f.Fatal(err)
		}
		seg, err := os.ReadFile(segmentPath(dir, 1))
		if err != nil {
			f.Fatal(err)
		}
		ix, err := os.ReadFile(filepath.Join(dir, indexName))
		if err != nil {
			f.Fatal(err)
		}
		ix = ix[:indexHeaderSize+8*indexEntrySize]
		f.Add(seg, ix)
		f.Add(seg, []byte{})
		f.Add(seg[:len(seg)/2], ix)
		flipped := append([]byte(nil), seg...)
		flipped[len(flipped)/3] ^= 4
		f.Add(flipped, ix)
		// A record's header pointing far beyond the file.
		long := append([]byte(nil), seg...)
		long[segmentHeaderSize+13] = 0x7f
		f.Add(long, ix)
	}
	f.Add([]byte("KSPS"), []byte("KSPI"))
	f.Fuzz(func(t *testing.T, seg, ix []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(segmentPath(dir, 1), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		if len(ix) > 0 {
			if err := os.WriteFile(filepath.Join(dir, indexName), ix, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := OpenReader([]string{dir}); err == nil {
			for id := uint64(0); id < 8; id++ {
				r.Get(id)
			}
			r.Scan(context.Background(), func(p *Page) error { return nil })
			r.Close()
		}
		s, err := Open(Config{Dirs: []string{dir}})
		if err != nil {
			return
		}
		if err := s.Close(); err != nil {
			t.Fatalf("closing a recovered store: %v", err)
		}
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatalf("reading a recovered store: %v", err)
		}
		defer r.Close()
		for id := uint64(0); id < 8; id++ {
			r.Get(id)
		}
		if err := r.Scan(context.Background(), func(p *Page) error { return nil }); err != nil {
			t.Fatalf("scanning a recovered store: %v", err)
		}
	})
}
