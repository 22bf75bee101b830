package communicator

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// readAll drains s's unread items through readChunk in chunks of limit
// bytes and returns their URLs.
func readAll(t *testing.T, s *spill, limit int) []string {
	t.Helper()
	var out []string
	for i := 0; s.unread(); i++ {
		if i > 1<<20 {
			t.Fatal("reader does not advance")
		}
		var q queue
		if err := s.readChunk(&q, limit); err != nil {
			t.Fatal(err)
		}
		for _, it := range q.items[q.head:] {
			out = append(out, string(q.bytesOf(it)))
		}
	}
	return out
}

// TestSpillWriteThrough: items spilled in this run are read back from
// memory, in order, while the file gets every record: the file's bytes
// are not read (they are overwritten under the reader here and it does
// not notice), marks work as before, and a reopened file delivers from
// the last mark. Items beyond memCap come from the file, and memory takes
// over again once the reader has caught up.
func TestSpillWriteThrough(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	url := func(k int) string { return fmt.Sprintf("http://h%d.example/page/%d", k%5, k) }
	var want []string
	for k := range 20 {
		s.append(uint64(k), []byte(url(k)))
		want = append(want, url(k))
	}
	if err := s.sync(); err != nil {
		t.Fatal(err)
	}
	// Scribble over the records: a read of the file would fail its CRCs.
	path := s.path
	good, _ := os.ReadFile(path)
	os.WriteFile(path, append(good[:spillHeader:spillHeader], bytes.Repeat([]byte{0xa5}, len(good)-spillHeader)...), 0o644)
	// Two chunks, then a mark between them as the endpoint's upkeep does.
	var q queue
	if err := s.readChunk(&q, 100); err != nil {
		t.Fatal(err)
	}
	first := q.len()
	if first == 0 || first == 20 || s.unreadItems != int64(20-first) {
		t.Fatalf("first chunk of %d items, %d unread", first, s.unreadItems)
	}
	var got []string
	for _, it := range q.items[q.head:] {
		got = append(got, string(q.bytesOf(it)))
	}
	if err := s.mark(s.readOff, false); err != nil {
		t.Fatal(err)
	}
	got = append(got, readAll(t, s, 100)...)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(s.errs) != 0 || s.unreadItems != 0 {
		t.Fatalf("read back %q, errors %q; want %q", got, s.errs, want)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}

	// Reopened (the good bytes back, plus the mark the close wrote): the
	// items after the mark are read from the file.
	after, _ := os.ReadFile(path)
	os.WriteFile(path, append(good, after[len(good):]...), 0o644)
	s, err = openSpill(dir, 1, 2, 1000, 0)
	if err != nil || len(s.errs) != 0 {
		t.Fatal(err, s.errs)
	}
	if got := readAll(t, s, 100); fmt.Sprint(got) != fmt.Sprint(want[first:]) {
		t.Fatalf("after reopening: %q, want %q", got, want[first:])
	}

	// More than memCap while nothing is read: memory lets go, the file
	// delivers in order; after that memory keeps items again.
	want = want[:0]
	long := bytes.Repeat([]byte("x"), 900)
	for k := 0; len(want)*900 <= memCap+10*900; k++ {
		u := fmt.Sprintf("%s/%d", long, k)
		s.append(7, []byte(u))
		want = append(want, u)
	}
	if s.mem.on {
		t.Fatal("memory kept more than memCap")
	}
	if got := readAll(t, s, 16*1024); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("beyond memCap: %d items read, want %d", len(got), len(want))
	}
	s.append(1, []byte("http://again.example/"))
	if !s.mem.on || !s.mem.covers(s.readOff) {
		t.Fatalf("memory not keeping again after the reader caught up: %+v", s.mem.on)
	}
	if got := readAll(t, s, 100); len(got) != 1 || got[0] != "http://again.example/" {
		t.Fatalf("after catching up: %q", got)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzSpillWriteThrough runs a spill file through appends, reads, marks
// (plain and idle, which truncates), compactions, syncs and reopens (memory lost, as
// after a crash or a restart) chosen by the input, against a model: the
// reader returns every item appended, in order, exactly once per run, and
// after a reopen exactly the items from the last mark on; memory is kept
// small so that it fills and lets go.
func FuzzSpillWriteThrough(f *testing.F) {
	f.Add([]byte{0, 1, 2, 4, 5, 0, 6, 7, 4, 8, 1, 4})
	f.Add(bytes.Repeat([]byte{3, 3, 3, 4}, 20))
	f.Add([]byte{0, 0, 0, 7, 1, 4, 5, 7, 4, 5, 8, 0, 4})
	f.Add([]byte{0, 10, 20, 30, 0, 10, 14, 14, 14, 14, 14, 14, 5, 9, 0, 4, 5, 9, 7, 4, 0, 9, 14, 15, 19, 17, 14})
	f.Fuzz(func(t *testing.T, ops []byte) {
		dir := t.TempDir()
		open := func() *spill {
			s, err := openSpill(dir, 1, 2, 1000, 0)
			if err != nil || len(s.errs) > 0 {
				t.Fatal(err, s.errs)
			}
			s.mem.limit = 700
			s.compactAt = 300
			return s
		}
		s := open()
		defer func() { s.close() }()
		type item struct {
			off int64
			url string
		}
		var items []item // appended, in file order, since the last truncation
		next := 0        // the next item the reader must return
		mark := int64(spillHeader)
		for i, op := range ops {
			switch op % 10 {
			case 0, 1, 2, 3:
				u := fmt.Sprintf("http://h%d.example/%d/%s", op%3, i, strings.Repeat("p", int(op)%7*40))
				items = append(items, item{s.end, u})
				if err := s.append(uint64(op), []byte(u)); err != nil {
					t.Fatal(err)
				}
			case 4:
				if !s.unread() {
					continue
				}
				var q queue
				if err := s.readChunk(&q, 1+int(op)*7); err != nil {
					t.Fatal(err)
				}
				for _, it := range q.items[q.head:] {
					if next >= len(items) || string(q.bytesOf(it)) != items[next].url {
						t.Fatalf("op %d: read %q, want item %d of %d", i, q.bytesOf(it), next, len(items))
					}
					next++
				}
			case 9:
				// Rewritten without what the last mark acknowledged.
				c := s.consumed
				gone, err := s.compact(c)
				if err != nil {
					t.Fatal(err)
				}
				if gone == 0 {
					continue
				}
				if gone != c-spillHeader {
					t.Fatalf("op %d: compact at %d moved offsets by %d", i, c, gone)
				}
				k := sort.Search(len(items), func(k int) bool { return items[k].off >= c })
				if next < k {
					t.Fatalf("op %d: compacted away unread items", i)
				}
				items, next = items[k:], next-k
				for j := range items {
					items[j].off -= gone
				}
				mark = s.consumed
			case 5, 8:
				idle := op%10 == 8 && !s.unread()
				if err := s.mark(s.readOff, idle); err != nil {
					t.Fatal(err)
				}
				if s.end == spillHeader { // truncated: everything consumed
					items, next = nil, 0
				}
				mark = s.consumed
			case 6:
				if err := s.sync(); err != nil {
					t.Fatal(err)
				}
			case 7:
				if err := s.close(); err != nil {
					t.Fatal(err)
				}
				s = open()
				next = sort.Search(len(items), func(k int) bool { return items[k].off >= mark })
			}
			if want := int64(len(items) - next); s.unreadItems != want {
				t.Fatalf("op %d: %d unread items, model %d", i, s.unreadItems, want)
			}
		}
		for s.unread() {
			var q queue
			if err := s.readChunk(&q, 4096); err != nil {
				t.Fatal(err)
			}
			for _, it := range q.items[q.head:] {
				if next >= len(items) || string(q.bytesOf(it)) != items[next].url {
					t.Fatalf("end: read %q, want item %d of %d", q.bytesOf(it), next, len(items))
				}
				next++
			}
		}
		if next != len(items) {
			t.Fatalf("%d of %d items read", next, len(items))
		}
	})
}
