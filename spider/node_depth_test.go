package spider

import (
	"fmt"
	"testing"
)

// The seen-URL cache starts small, grows as it fills, never past
// seenSlots, and keeps what it holds when it grows (a direct-mapped cache
// may lose an entry to a collision, never return a wrong id).
func TestSeenCacheGrows(t *testing.T) {
	var s treeDepth
	url := func(i int) string { return fmt.Sprintf("http://h%d.example/p/%d.html", i%97, i) }
	const n = 3 * seenSlots
	for i := range n {
		u := url(i)
		s.put(s.slot(u), u, uint32(i))
		if e := s.slot(u); e.u != u || e.id != uint32(i) {
			t.Fatalf("URL %d not in the cache right after put: %+v", i, *e)
		}
		if i == 0 && len(s.seen) != seenMinSlots {
			t.Fatalf("cache starts at %d slots, want %d", len(s.seen), seenMinSlots)
		}
		if len(s.seen) > seenSlots {
			t.Fatalf("cache grew to %d slots, past %d", len(s.seen), seenSlots)
		}
	}
	if len(s.seen) != seenSlots {
		t.Fatalf("cache of %d slots after %d URLs, want %d", len(s.seen), n, seenSlots)
	}
	used, kept := 0, 0
	for _, e := range s.seen {
		if e.u != "" {
			used++
			if e.u != url(int(e.id)) {
				t.Fatalf("entry %q has the id of %q", e.u, url(int(e.id)))
			}
		}
	}
	for i := n - 1000; i < n; i++ {
		if s.slot(url(i)).u == url(i) {
			kept++
		}
	}
	if used != s.seenUsed {
		t.Fatalf("%d slots taken, counted %d", used, s.seenUsed)
	}
	if kept < 900 {
		t.Fatalf("only %d of the last 1000 URLs in a %d-slot cache", kept, len(s.seen))
	}
}
