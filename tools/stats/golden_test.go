package stats

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// scanStore runs a Collector over a real store, as kspider stats does.
func scanStore(t *testing.T, dirs []string, opts Options) *Report {
	t.Helper()
	r, err := storage.OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := New(opts)
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		c.Add(p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.AddDamage(r.Stats().Skipped, r.Stats().Lost)
	return c.Report()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it after a deliberate change):\n%s", path, got)
	}
}

// TestGolden stores the storetest pages over two directories (two savers,
// so the scan runs two goroutines) and compares the text, JSON and HTML
// reports with the golden files.
func TestGolden(t *testing.T) {
	dirs := storetest.Build(t, []string{t.TempDir(), t.TempDir()}, "lzo", storetest.Pages())
	r := scanStore(t, dirs, Options{NewLinkFunc: CrawlerLinks})
	var text, js, html bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&html, "kspider statistics: golden store"); err != nil {
		t.Fatal(err)
	}
	golden(t, "golden.txt", text.Bytes())
	golden(t, "golden.json", js.Bytes())
	golden(t, "golden.html", html.Bytes())
}

// TestCorruptRecordIsCounted damages one record: the scan skips it, the
// report counts it and every other page.
func TestCorruptRecordIsCounted(t *testing.T) {
	pages := storetest.Pages()
	dirs := storetest.Build(t, []string{t.TempDir()}, "none", pages)
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	r := scanStore(t, dirs, Options{NewLinkFunc: CrawlerLinks})
	if r.Problems.BadRecords != 1 || r.Summary.URLs != int64(len(pages)-1) {
		t.Fatalf("bad records %d, URLs %d; want 1 and %d", r.Problems.BadRecords, r.Summary.URLs, len(pages)-1)
	}
}
