package storage

import (
	"bytes"
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

// fuzzDamage damages b as op says: 0 flips bits (data[0]), 1 zeroes
// len(data) bytes, 2 truncates, 3 appends data, 4 overwrites with data, 5
// swaps len(data) bytes at pos with those at pos2. It returns the ranges
// of the original it changed, as the faults of TestDamageEveryFileKind do.
func fuzzDamage(b []byte, op uint8, pos, pos2 uint32, data []byte) ([]byte, [][2]int) {
	if len(b) == 0 {
		return b, nil
	}
	p := int(pos % uint32(len(b)))
	n := min(len(data), len(b)-p)
	switch op % 6 {
	case 0:
		if len(data) == 0 || data[0] == 0 {
			return b, nil
		}
		b[p] ^= data[0]
		return b, [][2]int{{p, p + 1}}
	case 1:
		clear(b[p : p+n])
		return b, [][2]int{{p, p + n}}
	case 2:
		return b[:p], [][2]int{{p, len(b)}}
	case 3:
		return append(b, data...), [][2]int{{len(b), len(b)}}
	case 4:
		copy(b[p:], data[:n])
		return b, [][2]int{{p, p + n}}
	default:
		q := int(pos2 % uint32(len(b)))
		n = min(n, len(b)-q)
		if n == 0 || p < q+n && q < p+n {
			return b, nil
		}
		tmp := append([]byte(nil), b[p:p+n]...)
		copy(b[p:], b[q:q+n])
		copy(b[q:], tmp)
		return b, [][2]int{{p, p + n}, {q, q + n}}
	}
}

// fuzzDamagedStore damages one file of a store of 40 pages as the fuzzer
// says and checks the reader never lies about it (checkDamaged): no panic,
// no wrong page, every intact page read, the damage reported, and Check
// finding it. file picks the file: a segment by number, or the index.
func fuzzDamagedStore(f *testing.F, file func(seg uint8) (name string, num uint32)) {
	const n = 40
	base, spans := layoutStore(f, smallSegments(), n)
	f.Add(uint8(1), uint8(0), uint32(100), uint32(0), []byte{0x10})
	f.Add(uint8(2), uint8(1), uint32(3), uint32(0), make([]byte, 40))
	f.Add(uint8(1), uint8(2), uint32(5000), uint32(0), []byte{})
	f.Add(uint8(3), uint8(3), uint32(0), uint32(0), []byte("KSPr\x01junk"))
	f.Add(uint8(1), uint8(5), uint32(20), uint32(3000), make([]byte, 300))
	f.Fuzz(func(t *testing.T, seg, op uint8, pos, pos2 uint32, data []byte) {
		dir := copyDir(t, base)
		name, num := file(seg)
		path := filepath.Join(dir, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			return // no such segment
		}
		damaged, changed := fuzzDamage(append([]byte(nil), orig...), op, pos, pos2, data)
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		intact := func(id uint64) bool {
			sp := spans[id]
			if num == 0 || sp.seg != num {
				return true
			}
			for _, c := range changed {
				if c[0] != c[1] && int64(c[0]) < sp.end && sp.off < int64(c[1]) {
					return false
				}
			}
			return true
		}
		checkDamaged(t, dir, path, n, intact, !bytes.Equal(orig, damaged), false)
	})
}

// FuzzDamagedSegment damages a segment file (header or records).
func FuzzDamagedSegment(f *testing.F) {
	fuzzDamagedStore(f, func(seg uint8) (string, uint32) {
		n := uint32(seg%4) + 1
		return segmentName(n), n
	})
}

// FuzzDamagedIndex damages the index.
func FuzzDamagedIndex(f *testing.F) {
	fuzzDamagedStore(f, func(uint8) (string, uint32) { return indexName, 0 })
}
