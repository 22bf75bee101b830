package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	at4 := appendTo(t, path, encodeRecord(t, testPage(4), 4))
	// Page 4 stored again behind it, synced and indexed (its entry set
	// after the checkpoint): a record the recovery must keep.
	ix, err := openIndex(filepath.Join(dir, indexName), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.set(4, 1, at4); err != nil {
		t.Fatal(err)
	}
	if err := ix.close(); err != nil {
		t.Fatal(err)
	}

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

// joinStore makes dir to a directory of the store dir from is one of, as
// a Store opened on both would: to gets from's STORE file.
func joinStore(t testing.TB, from, to string) {
	t.Helper()
	id, err := readStoreFile(from)
	if err != nil || id == (storeID{}) {
		t.Fatalf("%s: store %v, %v", from, id, err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeStoreFile(to, id); err != nil {
		t.Fatal(err)
	}
}

// otherStore writes pages [0, n) of another crawl (other URLs, fetched
// later) into a store of its own, with small segments, and returns its
// directory.
func otherStore(t *testing.T, n uint64) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}, SegmentSize: 24 << 10, Compressors: 1, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	for id := range n {
		if err := s.Put(context.Background(), foreignPage(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A segment copied in from another store under a number of this one's
// (a restore from the wrong backup, a mix-up by hand) was read as this
// store's: Scan and Get returned the other crawl's pages under this
// store's URL ids, other URLs, and check said ok. Each segment now names
// its store: one of another is damage naming both stores, none of its
// records read (its pages lost, counted), a writer never indexes it, and
// kspider check --repair moves it into damaged/.
func TestSegmentOfAnotherStoreIsDamage(t *testing.T) {
	const n = 60
	dir, spans := layoutStore(t, smallSegments(), n)
	other := otherStore(t, n)
	b, err := os.ReadFile(segmentPath(other, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentPath(dir, 2), b, 0o644); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, sp := range spans {
		if sp.seg == 2 {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no page in segment 2")
	}
	read := func(when string) {
		t.Helper()
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for id := range uint64(n) {
			p, err := r.Get(id)
			switch {
			case spans[id].seg == 2 && err == nil:
				t.Fatalf("%s: Get(%d) of a page in the replaced segment returned %s", when, id, p.URL)
			case spans[id].seg != 2 && err != nil:
				t.Fatalf("%s: Get(%d): %v", when, id, err)
			case err == nil:
				samePage(t, p, testPage(id))
			}
		}
		var urls []string
		if err := r.Scan(context.Background(), func(p *Page) error {
			if p.URL != testPage(p.URLID).URL {
				urls = append(urls, p.URL)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		st := r.Stats()
		if len(urls) > 0 || st.Records != int64(n-lost) || st.Lost != int64(lost) {
			t.Fatalf("%s: scan: %d pages (want %d), %d lost (want %d), pages of the other store: %q", when, st.Records, n-lost, st.Lost, lost, urls)
		}
		if es := fmt.Sprint(st.Errors); !strings.Contains(es, segmentPath(dir, 2)) || !strings.Contains(es, "another store's segment") {
			t.Fatalf("%s: the foreign segment not reported: %v", when, st.Errors)
		}
	}
	read("before a writer")
	reopenLogged(t, dir)
	read("after a writer")
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(dir + "/" + DamagedDir + "/" + segmentName(2)); err != nil {
		t.Fatalf("the foreign segment not moved into %s: %v\n%s", DamagedDir, err, out.String())
	}
}

// Data directories of two stores listed together (swapped between two
// nodes' configurations, say) were read and written as one store; now
// OpenReader and Open refuse them, naming both.
func TestDirectoriesOfTwoStoresAreRefused(t *testing.T) {
	ours, _ := layoutStore(t, smallSegments(), 20)
	theirs := otherStore(t, 20)
	if _, err := OpenReader([]string{ours, theirs}); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), ours) || !strings.Contains(err.Error(), theirs) {
		t.Fatalf("OpenReader of two stores' directories: %v", err)
	}
	if s, err := Open(Config{Dirs: []string{ours, theirs}}); !errors.Is(err, ErrForeign) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of two stores' directories: %v", err)
	}
	// A new directory joins the store it is listed with.
	added := t.TempDir()
	writeStore(t, Config{Dirs: []string{ours, added}}, 20, 40)
	checkStore(t, []string{ours, added}, 0, 40)
}

// A damaged STORE file: the reader says so and reads on (the segments
// name the store), the writer refuses, and check --repair sets it aside
// and writes it anew from the segments.
func TestDamagedStoreFile(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 20)
	want, err := readStoreFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, dir+"/"+storeFileName, 10)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	seen := scanAll(t, r)
	st := r.Stats()
	r.Close()
	if len(seen) != 20 || !strings.Contains(fmt.Sprint(st.Errors), storeFileName) {
		t.Fatalf("scan with a damaged STORE file: %d pages, %v", len(seen), st.Errors)
	}
	if s, err := Open(Config{Dirs: []string{dir}}); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("writer on a damaged STORE file: %v", err)
	}
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	if got, err := readStoreFile(dir); err != nil || got != want {
		t.Fatalf("STORE after the repair: %v, %v; want %v", got, err, want)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 20, 30)
	checkStore(t, []string{dir}, 0, 30)
}

// A node's page store swapped for another node's (each store a directory
// of its own, so no two stores were listed together) was written with
// this node's URL ids among the other's pages. A Store opened for a URL
// tree (Config.TreeID) takes the tree's ID, and refuses a store of
// another tree.
func TestStoreOfAnotherTreeIsRefused(t *testing.T) {
	dir := t.TempDir()
	mine, theirs := newStoreID(), newStoreID()
	writeStore(t, Config{Dirs: []string{dir}, TreeID: mine}, 0, 10)
	if id, err := readStoreFile(dir); err != nil || id != mine {
		t.Fatalf("STORE of a store opened for tree %v: %v, %v", mine, id, err)
	}
	s, err := Open(Config{Dirs: []string{dir}, TreeID: theirs})
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), mine.String()) || !strings.Contains(err.Error(), theirs.String()) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open for another tree: %v", err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 10, 20) // no tree given: the store's own
	writeStore(t, Config{Dirs: []string{dir}, TreeID: mine}, 20, 30)
	checkStore(t, []string{dir}, 0, 30)
}

// A directory without its STORE file (lost, or set aside as damaged) took
// its ID from the newest segment naming one, so another store's segment
// copied in under the next number made the whole directory that store's:
// a Reader read that segment's pages as this store's and reported every
// segment of its own foreign, and kspider check --repair wrote STORE anew
// naming the other store and moved every own segment into damaged/. Now
// segments naming two stores, with no STORE to say which is the
// directory's, are an error naming both.
func TestSegmentsOfTwoStoresWithoutSTORE(t *testing.T) {
	const n = 60
	dir, _ := layoutStore(t, smallSegments(), n)
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	next := segs[len(segs)-1] + 1
	other := otherStore(t, 3*n)
	b, err := os.ReadFile(segmentPath(other, next))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentPath(dir, next), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, storeFileName)); err != nil {
		t.Fatal(err)
	}
	named := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrForeign) || !strings.Contains(fmt.Sprint(err), segmentPath(dir, next)) || !strings.Contains(fmt.Sprint(err), segmentPath(dir, segs[len(segs)-1])) {
			t.Errorf("%s: %v, want ErrForeign naming %s and %s", what, err, segmentPath(dir, next), segmentPath(dir, segs[len(segs)-1]))
		}
	}
	r, err := OpenReader([]string{dir})
	if err == nil {
		r.Close()
	}
	named("OpenReader", err)
	s, err := Open(Config{Dirs: []string{dir}, Logf: func(string, ...any) {}})
	if err == nil {
		s.Close()
	}
	named("Open", err)
	var out strings.Builder
	_, err = Check(dir, true, &out)
	named("check --repair", err)
	if _, err := os.Stat(filepath.Join(dir, DamagedDir)); err == nil {
		t.Errorf("check --repair moved files into %s:\n%s", DamagedDir, out.String())
	}
}
