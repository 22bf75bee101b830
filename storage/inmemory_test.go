package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without its url.idx a Reader indexes every record in memory, about 50
// bytes each and no bound (gigabytes for a large store), and said only
// "reading the segments instead". It now says how many records and about
// how much memory, there and when it rebuilds a damaged index's view.
func TestInMemoryIndexSaysItsCost(t *testing.T) {
	const n = 60
	dir, _ := layoutStore(t, smallSegments(), n)
	if err := os.Remove(filepath.Join(dir, indexName)); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if es := fmt.Sprint(r.Stats().Errors); !strings.Contains(es, fmt.Sprintf("reading the segments instead (%d records indexed in memory, about 1 MB)", n)) {
		t.Fatalf("missing index: %s", es)
	}
	if got := inMemory(100_000_000); got != "100000000 records indexed in memory, about 4769 MB" {
		t.Errorf("inMemory(1e8) = %q", got)
	}
}
