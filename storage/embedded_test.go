package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A page whose body is itself a segment of a kspider store (a crawl of a
// site serving one) holds, byte for byte, records that pass every check.
// Damage to that page's body made the search for the next record land on
// them: they were read as this store's records, the index was taken for
// damaged since it pointed at none of them, and the view rebuilt from the
// segments then gave Get the embedded pages under this store's URL ids.
// A record whose header is intact is now skipped whole: the search starts
// behind it.
func TestDamagedPageHoldingASegment(t *testing.T) {
	const n = 10
	other := otherStore(t, n)
	inner, err := os.ReadFile(segmentPath(other, 1))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}, Codec: "none", Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint64(n) {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			t.Fatal(err)
		}
	}
	holder := testPage(n)
	holder.Body = inner
	if err := s.Put(context.Background(), holder); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), testPage(n+1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	l, ok, _ := r.dirs[0].locate(n)
	r.Close()
	if !ok {
		t.Fatal("the holder page is not indexed")
	}
	// A flipped bit in the holder's body, before the segment it holds.
	flipByte(t, segmentPath(dir, 1), l.off+recordHeaderSize+int64(len(holder.URL))+int64(len(holder.Header))+5)

	r, err = OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var foreign []string
	if err := r.Scan(context.Background(), func(p *Page) error {
		if p.URL != testPage(p.URLID).URL {
			foreign = append(foreign, p.URL)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range uint64(n + 2) {
		p, err := r.Get(id)
		switch {
		case id == n:
			if err == nil {
				t.Errorf("Get(%d) of the damaged page: no error", id)
			}
		case err != nil:
			t.Fatalf("Get(%d): %v", id, err)
		case p.URL != testPage(id).URL:
			foreign = append(foreign, p.URL)
		}
	}
	st := r.Stats()
	if len(foreign) > 0 || st.Records != n+1 || st.Skipped != 1 {
		t.Fatalf("scan: %d pages (want %d), %d damaged regions (want 1), pages out of the damaged one's body: %q; %v", st.Records, n+1, st.Skipped, foreign, st.Errors)
	}
}

// Damage to the header of a page holding a segment: the search for the
// next record cannot start behind it, and found the records in its body.
// Before the index checkpoint, a record found so is taken only if the
// index points at it or at a later record of its URL id.
func TestDamagedHeaderOfAPageHoldingASegment(t *testing.T) {
	const n = 10
	other := otherStore(t, n)
	inner, err := os.ReadFile(segmentPath(other, 1))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Open(Config{Dirs: []string{dir}, Codec: "none", Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint64(n) {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			t.Fatal(err)
		}
	}
	holder := testPage(n)
	holder.Body = inner
	if err := s.Put(context.Background(), holder); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), testPage(n+1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	l, ok, _ := r.dirs[0].locate(n)
	r.Close()
	if !ok {
		t.Fatal("the holder page is not indexed")
	}
	flipByte(t, segmentPath(dir, 1), l.off+12) // its length

	check := func(when string) {
		t.Helper()
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var foreign []string
		if err := r.Scan(context.Background(), func(p *Page) error {
			if p.URL != testPage(p.URLID).URL {
				foreign = append(foreign, p.URL)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for id := range uint64(n + 2) {
			p, err := r.Get(id)
			switch {
			case id == n:
			case err != nil:
				t.Fatalf("%s: Get(%d): %v", when, id, err)
			case p.URL != testPage(id).URL:
				foreign = append(foreign, p.URL)
			}
		}
		if st := r.Stats(); len(foreign) > 0 || st.Records < n+1 {
			t.Fatalf("%s: scan: %d pages (want %d), pages out of the damaged one's body: %q; %v", when, st.Records, n+1, foreign, st.Errors)
		}
	}
	check("damaged")
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	check("repaired")
}

// embeddedTail writes n pages into a store with a checkpoint, then a page
// holding a segment of another crawl (pages 0 to 3n of it: ids this store
// holds and ids it does not), id n+1, and page n, and puts the index header
// back to that checkpoint, as a crash before the next one leaves it. The
// holder's record header is zeroed (a power cut that kept the blocks of its
// body, not its first one). neverSynced takes the last two pages out of
// the index too: records never reported durable.
func embeddedTail(t *testing.T, n uint64, neverSynced bool) (dir string, holder location) {
	t.Helper()
	inner, err := os.ReadFile(segmentPath(otherStore(t, 3*n), 1))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	// One compressor: the pages are written in the order put.
	cfg := Config{Dirs: []string{dir}, Codec: "none", Compressors: 1, Logf: func(string, ...any) {}}
	writeStore(t, cfg, 0, n)
	ixPath := filepath.Join(dir, indexName)
	ix, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	header := ix[:indexHeaderSize]
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := testPage(n + 1)
	h.Body = inner
	for _, p := range []*Page{h, testPage(n)} {
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	holder, ok, _ := r.dirs[0].locate(n + 1)
	r.Close()
	if !ok {
		t.Fatal("the holder page is not indexed")
	}
	f, err := os.OpenFile(ixPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(header, 0); err != nil {
		t.Fatal(err)
	}
	if neverSynced {
		if _, err := f.WriteAt(make([]byte, 2*indexEntrySize), entryOffset(n)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := os.OpenFile(segmentPath(dir, holder.seg), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.WriteAt(make([]byte, recordHeaderSize), holder.off); err != nil {
		t.Fatal(err)
	}
	return dir, holder
}

// readEmbeddedTail checks what a Reader of embeddedTail's store returns:
// this store's pages only, the holder (id n+1) damaged or, never synced,
// absent, and no page of the crawl in its body under any id.
func readEmbeddedTail(t *testing.T, when, dir string, n uint64, neverSynced bool) {
	t.Helper()
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var foreign []string
	if err := r.Scan(context.Background(), func(p *Page) error {
		if p.URL != testPage(p.URLID).URL {
			foreign = append(foreign, p.URL)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range 3 * n {
		p, err := r.Get(id)
		switch {
		case err == nil && p.URL != testPage(id).URL:
			foreign = append(foreign, p.URL)
		case id < n && err != nil:
			t.Errorf("%s: Get(%d): %v", when, id, err)
		case id == n+1 && !neverSynced && !errors.Is(err, ErrCorrupt):
			t.Errorf("%s: Get(%d) of the damaged holder: %v, want damage", when, id, err)
		case id == n && !neverSynced && err != nil:
			t.Errorf("%s: Get(%d) of the page behind the holder: %v", when, id, err)
		case (id > n+1 || id >= n && neverSynced) && !errors.Is(err, ErrNotFound):
			t.Errorf("%s: Get(%d): %v, want ErrNotFound", when, id, err)
		}
	}
	if len(foreign) > 0 {
		t.Errorf("%s: pages out of the holder's body returned as this store's: %q", when, foreign)
	}
}

// A crash before the next index checkpoint leaves the records behind it to
// the writer's recovery, which read them with no index to ask: with the
// header of a page holding a segment torn, the search for the next record
// found the records in its body and indexed them as this store's, so Get
// returned another crawl's pages under this store's URL ids (its own
// pages' entries overwritten). Now a record the search finds is indexed
// only if the index points at it: one reported durable is there.
func TestWriterRecoveryOfATornPageHoldingASegment(t *testing.T) {
	const n = 10
	for _, neverSynced := range []bool{false, true} {
		t.Run(fmt.Sprintf("neverSynced=%v", neverSynced), func(t *testing.T) {
			dir, holder := embeddedTail(t, n, neverSynced)
			reopenLogged(t, dir)
			readEmbeddedTail(t, "after the writer's recovery", dir, n, neverSynced)
			fi, err := os.Stat(segmentPath(dir, holder.seg))
			if err != nil {
				t.Fatal(err)
			}
			if neverSynced && fi.Size() != holder.off {
				t.Errorf("segment of %d bytes after the recovery, want the torn tail from %d cut", fi.Size(), holder.off)
			}
		})
	}
}

// The same crash tail read before any writer opened the store (kspider
// get, export, stats after a crash): the Reader's search after damage took
// any record after the checkpoint, so it returned the pages in the torn
// holder's body as this store's. It now asks the index there too.
func TestReaderOfATornPageHoldingASegmentInACrashTail(t *testing.T) {
	const n = 10
	for _, neverSynced := range []bool{false, true} {
		t.Run(fmt.Sprintf("neverSynced=%v", neverSynced), func(t *testing.T) {
			dir, _ := embeddedTail(t, n, neverSynced)
			readEmbeddedTail(t, "before any writer", dir, n, neverSynced)
		})
	}
}
