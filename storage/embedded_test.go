package storage

import (
	"context"
	"os"
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
