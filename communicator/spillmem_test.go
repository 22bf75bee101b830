package communicator

import (
	"bytes"
	"fmt"
	"os"
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
	s, err := openSpill(dir, 1, 2, 1000)
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
	s, err = openSpill(dir, 1, 2, 1000)
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
