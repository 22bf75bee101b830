package testweb

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestExtSorterMerges: records of many lengths come back in order and all
// of them, through more runs than are merged at once.
func TestExtSorterMerges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	s := newExtSorter(t.TempDir(), 512)
	defer s.close()
	var want []string
	for range 5000 {
		r := fmt.Sprintf("%x", rng.Uint64()>>rng.IntN(64))
		want = append(want, r)
		if err := s.add([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if s.spills <= maxRuns || len(s.runs) > maxRuns || s.held > 512 {
		t.Fatalf("%d spills, %d runs, %d bytes held: want more than %d spills, at most %d runs, 512 bytes",
			s.spills, len(s.runs), s.held, maxRuns, maxRuns)
	}
	it, err := s.iter()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	for i := 0; ; i++ {
		r, err := it.next()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("%d records back, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || !bytes.Equal(r, []byte(want[i])) {
			t.Fatalf("record %d = %q, want %q", i, r, want[min(i, len(want)-1)])
		}
	}
}
