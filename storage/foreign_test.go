package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// encodeRecord returns p's record as a Store writes it, with its URL id
// then set to id (and its checksum made to match): a record of something
// other than this store, passing every check of its bytes.
func encodeRecord(t *testing.T, p *Page, id uint64) []byte {
	t.Helper()
	s, err := Open(Config{Dirs: []string{t.TempDir()}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	rec := append([]byte(nil), e.r.buf...)
	binary.LittleEndian.PutUint64(rec[16:], id)
	finishRecord(rec, int(binary.LittleEndian.Uint32(rec[52:])))
	return rec
}

// appendTo appends b to the file at path and returns the offset it went to.
func appendTo(t *testing.T, path string, b []byte) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A record passing its checks but naming a URL id beyond any index (2^41)
// after the checkpoint made every later open of the store fail ("beyond
// what an index can hold", naming no record), and kspider check --repair
// with it: the store was lost to one foreign record. It is now damage,
// named by segment and offset, and the pages around it are kept.
func TestRecordWithAHugeURLIDIsDamage(t *testing.T) {
	dir := t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 10)
	path := segmentPath(dir, 1)
	at := appendTo(t, path, encodeRecord(t, testPage(3), 1<<41))
	appendTo(t, path, encodeRecord(t, testPage(4), 4))

	logged := strings.Join(reopenLogged(t, dir), "\n")
	if want := fmt.Sprintf("%s at offset %d: corrupt record: URL id %d", path, at, uint64(1<<41)); !strings.Contains(logged, want) {
		t.Errorf("the writer's open did not name the record: %q", logged)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := scanAll(t, r)
	if len(seen) != 10 || !strings.Contains(fmt.Sprint(r.Stats().Errors), fmt.Sprintf("offset %d", at)) {
		t.Fatalf("scan: %d pages, want 10, and the record at %d reported: %v", len(seen), at, r.Stats().Errors)
	}
	for id := range uint64(10) {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	s, err := Open(Config{Dirs: []string{dir}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), &Page{URLID: 1 << 41, URL: "http://x.example/"}); err == nil || !strings.Contains(err.Error(), "beyond the largest a store holds") {
		t.Errorf("Put of URL id 2^41: %v, want it refused", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A URL id within bounds but far beyond the others had the index grown
// by fallocate up to it, filling the disk before failing. Now what the
// disk cannot hold is refused before anything is allocated. (On tmpfs,
// whose size is known to be far below the 64 GiB the largest id needs.)
func TestIndexGrowthBeyondTheDiskIsRefused(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Bavail*uint64(st.Bsize) >= (maxIndexedID+1)*indexEntrySize {
		t.Skip("no /dev/shm with less than 64 GiB free")
	}
	dir, err := os.MkdirTemp("/dev/shm", "storage-test")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	path := dir + "/" + indexName
	if err := createIndex(path); err != nil {
		t.Fatal(err)
	}
	ix, err := openIndex(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.close()
	err = ix.set(maxIndexedID, 1, segmentHeaderSize)
	if err == nil || !strings.Contains(err.Error(), "free") {
		t.Fatalf("set of URL id %d: %v, want it refused for want of room", uint64(maxIndexedID), err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != indexHeaderSize {
		t.Fatalf("index after the refusal: %v, %v; want %d bytes", fi.Size(), err, indexHeaderSize)
	}
}
