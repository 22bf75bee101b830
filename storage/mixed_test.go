package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// foreignPage is page id of another crawl: another URL, fetched later.
func foreignPage(id uint64) *Page {
	p := testPage(id)
	p.URL = fmt.Sprintf("http://other-crawl.example/%d", id)
	p.FetchTime = p.FetchTime.Add(time.Hour)
	return p
}

func putPages(t *testing.T, dir string, pages []*Page) {
	t.Helper()
	s, err := Open(Config{Dirs: []string{dir}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A URL's id is the URL tree's, fixed once, so a re-crawl stores the same
// URL again. A directory of another crawl's store listed with a store's
// own (or another crawl's pages written into one) has other URLs under the
// same ids, and the later fetch won: the page of this crawl was left out
// of Scan (stats, export) and Get without a word. Now such ids are
// reported as damage, per pair of directories, with the pages hidden
// counted lost.
func TestPagesOfAnotherCrawlAreReported(t *testing.T) {
	ours, theirs := t.TempDir(), t.TempDir()
	var mine, other []*Page
	for id := uint64(0); id < 20; id++ {
		mine = append(mine, testPage(id))
	}
	for id := uint64(10); id < 30; id++ {
		other = append(other, foreignPage(id))
	}
	putPages(t, ours, mine)
	joinStore(t, ours, theirs) // a store from before identities, or a URL tree replaced
	putPages(t, theirs, other)

	check := func(dirs []string, where string) {
		t.Helper()
		r, err := OpenReader(dirs)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
			t.Fatal(err)
		}
		st := r.Stats()
		msg := fmt.Sprint(st.Errors)
		if st.Damage == 0 || st.Lost != 10 || !strings.Contains(msg, "10 URL ids name different URLs in "+where) ||
			!strings.Contains(msg, "other-crawl.example") {
			t.Errorf("%v: damage %d, lost %d, %s; want the 10 ids of both crawls reported", dirs, st.Damage, st.Lost, msg)
		}
	}
	check([]string{ours, theirs}, ours+" and "+theirs)

	// The other crawl's pages written into our directory.
	putPages(t, ours, other[:10])
	check([]string{ours}, "two records of "+ours)
}

// countReads counts the reads of a segment file.
type countReads struct {
	io.ReaderAt
	n atomic.Int64
}

func (c *countReads) ReadAt(p []byte, off int64) (int, error) {
	c.n.Add(1)
	return c.ReaderAt.ReadAt(p, off)
}

// Checking the URL of a page's later fetch (730d647) read that record a
// second time for every superseded record, after the check of the index
// entry had read it: a Scan of a re-crawled store did twice the reads it
// needs. One read of the later record now serves both.
func TestRecrawledPageIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	const n = 40
	writeStore(t, Config{Dirs: []string{dir}}, 0, n)
	var again []*Page
	for id := range uint64(n) {
		p := testPage(id)
		p.FetchTime = p.FetchTime.Add(time.Hour)
		again = append(again, p)
	}
	putPages(t, dir, again)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var counters []*countReads
	for _, sf := range r.dirs[0].order {
		c := &countReads{ReaderAt: sf.ra}
		sf.ra = c
		counters = append(counters, c)
	}
	var pages atomic.Int64
	if err := r.Scan(context.Background(), func(*Page) error { pages.Add(1); return nil }); err != nil || pages.Load() != n {
		t.Fatalf("scan: %d pages, %v; want %d", pages.Load(), err, n)
	}
	var reads int64
	for _, c := range counters {
		reads += c.n.Load()
	}
	// One read per segment for the scan (each fits a read window), one
	// per superseded record for its later fetch.
	if st := r.Stats(); st.Superseded != n || st.Damaged() || reads > int64(len(counters))+n {
		t.Fatalf("%d superseded, damage %v, %d reads of %d segments; want at most one read per superseded record beyond the scan's",
			st.Superseded, st.Errors, reads, len(counters))
	}
}
