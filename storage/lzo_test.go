package storage

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	lzo "github.com/rasky/go-lzo"
)

// lzoInputs are edge cases around the compressor's thresholds, repetitive
// and random data, and real HTML when the PostgreSQL docs are installed.
func lzoInputs(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var in [][]byte
	for _, n := range []int{0, 1, 3, 4, 12, 13, 14, 17, 18, 19, 238, 239, 255, 256, 300, 4096, 70000, 200000} {
		r := make([]byte, n)
		for i := range r {
			r[i] = byte(rng.IntN(256))
		}
		in = append(in, r, bytes.Repeat([]byte("a"), n), bytes.Repeat([]byte("<p>abc</p>"), n/10+1)[:n])
		mixed := make([]byte, n)
		for i := range mixed {
			mixed[i] = "abcdefgh"[rng.IntN(8)]
		}
		in = append(in, mixed)
	}
	files, _ := filepath.Glob("/usr/share/doc/postgresql-doc-15/html/*.html")
	for i, f := range files {
		if i%40 != 0 {
			continue
		}
		if b, err := os.ReadFile(f); err == nil {
			in = append(in, b)
		}
	}
	return in
}

// lzoPageRoots are the Debian documentation packages whose HTML pages the
// crawl benchmarks fetch; the compressor is measured on the same pages.
var lzoPageRoots = []string{
	"/usr/share/doc/postgresql-doc-15/html",
	"/usr/share/doc/python3.11-doc/html",
	"/usr/share/doc/openjdk-17-doc/api",
}

// lzoPages returns about perRoot real HTML pages from each installed root of
// lzoPageRoots, picked at an even stride through its sorted file list.
func lzoPages(tb testing.TB, perRoot int) [][]byte {
	var pages [][]byte
	for _, root := range lzoPageRoots {
		dir, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // package not installed
		}
		var files []string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".html") {
				files = append(files, path)
			}
			return nil
		})
		sort.Strings(files)
		stride := max(1, len(files)/perRoot)
		for i := 0; i < len(files); i += stride {
			b, err := os.ReadFile(files[i])
			if err != nil {
				tb.Fatal(err)
			}
			pages = append(pages, b)
		}
	}
	return pages
}

// lzoOffsetInputs put a repeat at each distance where the encoding of a
// match changes (M2 up to 0x800, M3 up to 0x4000, M4 up to 0xbfff, none
// beyond), and matches that run to the very last byte.
func lzoOffsetInputs() [][]byte {
	rng := rand.New(rand.NewPCG(5, 6))
	var in [][]byte
	for _, d := range []int{4, 5, 8, 9, 0x7ff, 0x800, 0x801, 0x3fff, 0x4000, 0x4001, 0x4800, 0xbffe, 0xbfff, 0xc000, 0xc001} {
		for _, n := range []int{4, 8, 9, 33, 34, 300} {
			b := make([]byte, d+n)
			for i := range d {
				b[i] = byte(rng.IntN(256))
			}
			for i := d; i < len(b); i++ {
				b[i] = b[i-d]
			}
			in = append(in, b, append(b, "tail of literals"...))
		}
	}
	return in
}

// checkLZORoundTrip compresses in after a prefix and checks that the prefix
// is intact and that both our decoder and go-lzo's read in back exactly.
func checkLZORoundTrip(t testing.TB, c *lzoCompressor, in []byte) []byte {
	prefix := []byte("prefix")
	got := c.appendCompress(append([]byte(nil), prefix...), in)
	if !bytes.Equal(got[:len(prefix)], prefix) {
		t.Fatalf("%d-byte input: the compressor overwrote what dst held", len(in))
	}
	if max := len(in) + len(in)/16 + 64 + 3; len(got)-len(prefix) > max {
		t.Fatalf("%d-byte input: compressed to %d bytes, more than the bound %d", len(in), len(got)-len(prefix), max)
	}
	z := got[len(prefix):]
	back, err := lzoDecompress([]byte("x"), z, len(in))
	if err != nil || back[0] != 'x' || !bytes.Equal(back[1:], in) {
		t.Fatalf("%d-byte input: round trip failed: %v", len(in), err)
	}
	ref, err := lzo.Decompress1X(bytes.NewReader(z), len(z), len(in))
	if err != nil || !bytes.Equal(ref, in) {
		t.Fatalf("%d-byte input: go-lzo reads it back wrong: %v", len(in), err)
	}
	return z
}

func TestLZORoundTrip(t *testing.T) {
	var c lzoCompressor
	inputs := append(lzoInputs(t), lzoOffsetInputs()...)
	inputs = append(inputs, lzoPages(t, 30)...)
	corpus, _ := filepath.Glob("testdata/fuzz/*/*")
	for _, f := range corpus {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	for i, in := range inputs {
		z := checkLZORoundTrip(t, &c, in)
		if _, err := lzoDecompress(nil, z, len(in)+1); err == nil {
			t.Fatalf("input %d: decoded with a wrong length", i)
		}
		if len(in) > 0 {
			if _, err := lzoDecompress(nil, z, len(in)-1); err == nil {
				t.Fatalf("input %d: decoded into too short an output", i)
			}
		}
	}
}

// TestLZOCompresses guards against a compressor that stays valid but stops
// finding matches: runs and repeated markup must shrink by far.
func TestLZOCompresses(t *testing.T) {
	var c lzoCompressor
	for _, in := range [][]byte{
		bytes.Repeat([]byte("a"), 200000),
		bytes.Repeat([]byte("<tr><td>cell</td></tr>\n"), 5000),
	} {
		if z := c.appendCompress(nil, in); len(z)*100 > len(in) {
			t.Errorf("%q... (%d bytes) compressed to %d bytes", in[:8], len(in), len(z))
		}
	}
}

func TestLZODecodeRejectsGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var c lzoCompressor
	good := c.appendCompress(nil, bytes.Repeat([]byte("<td>cell</td>"), 500))
	for i := 0; i < 2000; i++ {
		b := append([]byte(nil), good...)
		for j := rng.IntN(4); j >= 0; j-- {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		b = b[:rng.IntN(len(b)+1)]
		lzoDecompress(nil, b, 13*500) // must not panic
	}
}

func BenchmarkLZOCompress(b *testing.B) {
	b.Run("pages", func(b *testing.B) { benchmarkLZOCompress(b, lzoPages(b, 100)) })
	b.Run("mixed", func(b *testing.B) { benchmarkLZOCompress(b, lzoInputs(b)) })
}

// benchmarkLZOCompress compresses in with the storage compressor and with
// go-lzo, and reports the storage compressor's ratio (compressed/raw, %).
func benchmarkLZOCompress(b *testing.B, in [][]byte) {
	if len(in) == 0 {
		b.Skip("no input: documentation packages not installed")
	}
	var n int
	for _, x := range in {
		n += len(x)
	}
	b.Run("storage", func(b *testing.B) {
		var c lzoCompressor
		buf := make([]byte, 0, 1<<20)
		b.SetBytes(int64(n))
		b.ReportAllocs()
		var out int
		for range b.N {
			out = 0
			for _, x := range in {
				buf = c.appendCompress(buf[:0], x)
				out += len(buf)
			}
		}
		b.ReportMetric(100*float64(out)/float64(n), "%ratio")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/page")
	})
	b.Run("go-lzo", func(b *testing.B) {
		b.SetBytes(int64(n))
		b.ReportAllocs()
		for range b.N {
			for _, x := range in {
				lzo.Compress1X(x)
			}
		}
	})
}

// FuzzLZORoundTrip compresses arbitrary input: our decoder and go-lzo's
// read it back exactly.
func FuzzLZORoundTrip(f *testing.F) {
	for _, in := range lzoInputs(f)[:40] {
		f.Add(in)
	}
	for _, in := range lzoOffsetInputs()[:12] {
		f.Add(in)
	}
	var c lzoCompressor
	f.Fuzz(func(t *testing.T, in []byte) {
		checkLZORoundTrip(t, &c, in)
	})
}

// FuzzLZODecompress feeds arbitrary streams to the decoder: no panic, and
// whatever it accepts go-lzo decodes the same way.
func FuzzLZODecompress(f *testing.F) {
	var c lzoCompressor
	for _, in := range lzoInputs(f)[:20] {
		f.Add(c.appendCompress(nil, in), uint16(len(in)))
	}
	f.Fuzz(func(t *testing.T, src []byte, rawLen uint16) {
		out, err := lzoDecompress(nil, src, int(rawLen))
		if err != nil {
			return
		}
		if len(out) != int(rawLen) {
			t.Fatalf("decoded %d bytes, asked for %d", len(out), rawLen)
		}
		ref, err := lzo.Decompress1X(bytes.NewReader(src), len(src), int(rawLen))
		if err == nil && !bytes.Equal(ref, out) {
			t.Fatalf("go-lzo decodes differently")
		}
	})
}

func BenchmarkLZODecompress(b *testing.B) {
	in := lzoInputs(b)
	var c lzoCompressor
	var n int
	var comp [][]byte
	for _, x := range in {
		n += len(x)
		comp = append(comp, c.appendCompress(nil, x))
	}
	b.Run("storage", func(b *testing.B) {
		buf := make([]byte, 0, 1<<20)
		b.SetBytes(int64(n))
		b.ReportAllocs()
		for range b.N {
			for i, x := range comp {
				buf, _ = lzoDecompress(buf[:0], x, len(in[i]))
			}
		}
	})
	b.Run("go-lzo", func(b *testing.B) {
		b.SetBytes(int64(n))
		b.ReportAllocs()
		for range b.N {
			for i, x := range comp {
				lzo.Decompress1X(bytes.NewReader(x), len(x), len(in[i]))
			}
		}
	})
}
