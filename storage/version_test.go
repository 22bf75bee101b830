package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toVersion1 rewrites the store in dir as format version 1 wrote it:
// records with the version 1 CRC, segment headers of 16 bytes without CRC
// (records 24 bytes nearer the start), an index of 12-byte entries, no
// STORE file.
func toVersion1(t *testing.T, dir string) {
	t.Helper()
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	v := r.dirs[0].view.Load()
	const shift = segmentHeaderSize - segmentHeaderV2Size
	ck := r.dirs[0].ck
	old := make([]byte, indexHeaderSize)
	copy(old, indexMagic)
	binary.LittleEndian.PutUint32(old[4:], 1)
	binary.LittleEndian.PutUint32(old[8:], 12)
	binary.LittleEndian.PutUint32(old[16:], ck.seg)
	binary.LittleEndian.PutUint64(old[24:], uint64(ck.off-shift))
	binary.LittleEndian.PutUint32(old[32:], crc32.Checksum(old[:32], castagnoli))
	for id := uint64(0); id < v.ix.entries(); id++ {
		var e [12]byte
		if seg, off, st := v.ix.lookup(id); st == entrySet {
			binary.LittleEndian.PutUint32(e[0:], seg)
			binary.LittleEndian.PutUint64(e[4:], uint64(off-shift))
		}
		old = append(old, e[:]...)
	}
	// Records as version 1 wrote them: CRC over bytes 12 on only.
	for _, sf := range r.dirs[0].order {
		var patches [][2]int64 // offset, CRC
		err := r.eachRecord(sf, 0, nil, func(off int64, h recordHeader, rec []byte) error {
			patches = append(patches, [2]int64{off, int64(crc32.Checksum(rec[crcStart:], castagnoli))})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(patches) == 0 {
			t.Fatalf("%s: no record to rewrite", sf.path)
		}
		f, err := os.OpenFile(sf.path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range patches {
			var crc [4]byte
			binary.LittleEndian.PutUint32(crc[:], uint32(p[1]))
			f.WriteAt([]byte{1}, p[0]+4)
			f.WriteAt(crc[:], p[0]+8)
		}
		f.Close()
	}
	r.Close()
	if err := os.WriteFile(filepath.Join(dir, indexName), old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range nums {
		f, err := os.OpenFile(segmentPath(dir, n), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		var h [8]byte
		binary.LittleEndian.PutUint32(h[0:], 1) // version
		binary.LittleEndian.PutUint32(h[4:], n)
		f.WriteAt(h[:], 4)
		f.WriteAt([]byte{0, 0, 0, 0}, 12) // no CRC
		f.Close()
		shrinkHeader(t, segmentPath(dir, n))
	}
	if err := os.Remove(filepath.Join(dir, storeFileName)); err != nil {
		t.Fatal(err)
	}
}

// shrinkHeader makes the header of the segment at path the 16 bytes of
// versions 1 and 2: the bytes of version 3's beyond them go.
func shrinkHeader(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[:segmentHeaderV2Size:segmentHeaderV2Size], b[segmentHeaderSize:]...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A store written by format version 1 is read (its index rebuilt from the
// segments, which is said but is no damage), and written to.
func TestVersion1StoreIsRead(t *testing.T) {
	dir, _ := damagedStore(t, 40)
	toVersion1(t, dir)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	r.Close()
	if st.Damaged() || len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "format version 1, this kspider writes 4") {
		t.Fatalf("version 1 index: %+v", st)
	}
	checkStore(t, []string{dir}, 0, 40)
	if problems, err := Check(dir, false, new(strings.Builder)); problems != 0 || err != nil {
		t.Fatalf("check of a version 1 store: %d problems, %v", problems, err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 40, 50) // rebuilds the index as version 4
	checkStore(t, []string{dir}, 0, 50)
	r, err = OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st := r.Stats(); len(st.Notes) != 0 || st.Damaged() {
		t.Fatalf("after a writer: %+v", st)
	}
}

// Files of a newer format version are refused, naming both versions.
func TestNewerVersionIsRefused(t *testing.T) {
	dir, _ := damagedStore(t, 10)
	seg := segmentPath(dir, 1)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[4:], 4)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenReader([]string{dir})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version 4, this kspider reads versions 1 to 3") || !strings.Contains(err.Error(), seg) {
		t.Fatalf("segment of version 4: %v", err)
	}
	if _, err := Open(Config{Dirs: []string{dir}}); !errors.Is(err, ErrVersion) {
		t.Fatalf("writer on a segment of version 4: %v", err)
	}

	dir, _ = damagedStore(t, 10)
	ix := filepath.Join(dir, indexName)
	b, err = os.ReadFile(ix)
	if err != nil {
		t.Fatal(err)
	}
	// A newer kspider's checkpoint in one slot, the other slot ours.
	slot := b[indexSlotSize : 2*indexSlotSize]
	binary.LittleEndian.PutUint32(slot[4:], 5)
	binary.LittleEndian.PutUint32(slot[32:], indexSlotCRC(slot))
	if err := os.WriteFile(ix, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenReader([]string{dir})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "format version 5, this kspider reads version 4") {
		t.Fatalf("index of version 5: %v", err)
	}
	if _, err := Open(Config{Dirs: []string{dir}}); !errors.Is(err, ErrVersion) {
		t.Fatalf("writer on an index of version 5: %v", err)
	}
}
