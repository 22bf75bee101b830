package storage

import (
	"context"
	"fmt"
	"strings"
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
