package urltree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomURL draws from a small vocabulary so URLs share long prefixes and
// collide often, which exercises references and duplicates.
func randomURL(r *rand.Rand) []byte {
	hosts := []string{"a.com", "b.org", "www.example.com", "www.example.co", "x", "www.exa"}
	parts := []string{"", "/", "/a", "/ab", "/abc", "/index.html", "/a/b/c", "?q=1", "#f", "/\x00", "/\xff\xfe"}
	scheme := []string{"http://", "https://", "h"}
	var b []byte
	b = append(b, scheme[r.IntN(len(scheme))]...)
	b = append(b, hosts[r.IntN(len(hosts))]...)
	for n := r.IntN(4); n > 0; n-- {
		b = append(b, parts[r.IntN(len(parts))]...)
	}
	if r.IntN(10) == 0 {
		b = append(b, bytes.Repeat([]byte{byte('a' + r.IntN(3))}, r.IntN(300))...)
	}
	return b
}

// model is what the tree must behave like.
type model struct {
	ids  map[string]uint32
	urls []string
}

func (m *model) check(t *testing.T, tr *Tree, r *rand.Rand) {
	t.Helper()
	if tr.Len() != len(m.urls) {
		t.Fatalf("Len = %d, want %d", tr.Len(), len(m.urls))
	}
	var buf []byte
	for id, u := range m.urls {
		var err error
		buf, err = tr.Get(uint32(id), buf[:0])
		if err != nil || string(buf) != u {
			t.Fatalf("Get(%d) = %q, %v; want %q", id, buf, err, u)
		}
		if got, ok := tr.FindString(u); !ok || got != uint32(id) {
			t.Fatalf("Find(%q) = %d, %v; want %d", u, got, ok, id)
		}
	}
	for range 20 {
		u := randomURL(r)
		got, ok := tr.Find(u)
		want, wok := m.ids[string(u)]
		if ok != wok || (ok && got != want) {
			t.Fatalf("Find(%q) = %d, %v; want %d, %v", u, got, ok, want, wok)
		}
	}
	sorted := slices.Clone(m.urls)
	slices.Sort(sorted)
	i := 0
	for id, u := range tr.Sorted() {
		if i >= len(sorted) || string(u) != sorted[i] || m.ids[sorted[i]] != id {
			t.Fatalf("Sorted[%d] = %d %q, want %q", i, id, u, sorted[min(i, len(sorted)-1)])
		}
		i++
	}
	if i != len(sorted) {
		t.Fatalf("Sorted yielded %d URLs, want %d", i, len(sorted))
	}
	if err := tr.checkNodes(tr.root); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, tr)
}

func TestModel(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			dir := t.TempDir()
			tr, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := &model{ids: map[string]uint32{}}
			synced := 0 // URLs durable at the last Sync
			for step := range 400 {
				switch op := r.IntN(88); {
				case op < 70:
					u := randomURL(r)
					id, added, err := tr.Add(u)
					if err != nil {
						t.Fatal(err)
					}
					want, ok := m.ids[string(u)]
					if ok {
						if added || id != want {
							t.Fatalf("step %d: Add(%q) = %d, %v; want %d, false", step, u, id, added, want)
						}
					} else {
						if !added || id != uint32(len(m.urls)) {
							t.Fatalf("step %d: Add(%q) = %d, %v; want %d, true", step, u, id, added, len(m.urls))
						}
						m.ids[string(u)] = id
						m.urls = append(m.urls, string(u))
					}
				case op < 80:
					if err := tr.Sync(); err != nil {
						t.Fatal(err)
					}
					synced = len(m.urls)
				case op < 83:
					// Close cleanly and reopen: everything survives.
					if err := tr.Close(); err != nil {
						t.Fatal(err)
					}
					if tr, err = Open(dir, nil); err != nil {
						t.Fatal(err)
					}
					if tr.Recovered() {
						t.Fatal("clean reopen rebuilt the node array")
					}
					synced = len(m.urls)
					m.check(t, tr, r)
				case op < 86:
					// Drop the tree without Close, as a crash would: only
					// the synced prefix survives.
					tr.closeFiles()
					if tr, err = Open(dir, nil); err != nil {
						t.Fatal(err)
					}
					for _, u := range m.urls[synced:] {
						delete(m.ids, u)
					}
					m.urls = m.urls[:synced]
					m.check(t, tr, r)
				default:
					m.check(t, tr, r)
				}
			}
			m.check(t, tr, r)
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkKeys recomputes every node's key word from its bounds.
func checkKeys(t *testing.T, tr *Tree) {
	t.Helper()
	var walk func(x, lo, hi uint32)
	walk = func(x, lo, hi uint32) {
		if x == none {
			return
		}
		u := tr.appendURL(nil, x)
		loL, hiL := 0, 0
		if lo != none {
			loL = mismatch(u, tr.appendURL(nil, lo))
		}
		if hi != none {
			hiL = mismatch(u, tr.appendURL(nil, hi))
		}
		if want := makeKey(u, loL, hiL); tr.nodes.key(x) != want {
			t.Fatalf("node %d (%q): key %#x, want %#x", x, u, tr.nodes.key(x), want)
		}
		walk(tr.nodes.left(x), lo, x)
		walk(tr.nodes.right(x), x, hi)
	}
	walk(tr.root, none, none)
}
