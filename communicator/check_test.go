package communicator

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// spillFixture writes a spill file of 10 items from node 1 to node 2 and a
// state file into a new directory, and returns it with the items' offsets.
func spillFixture(t testing.TB) (string, []int64) {
	t.Helper()
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 10 {
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	st, err := openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(7, []stateEntry{{2, 5, 9}, {3, 6, 1}}); err != nil {
		t.Fatal(err)
	}
	return dir, offs
}

func TestCheckSpill(t *testing.T) {
	if _, err := CheckSpill(t.TempDir()); !errors.Is(err, ErrNoSpill) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty directory: %v", err)
	}
	dir, offs := spillFixture(t)
	rep, err := CheckSpill(dir)
	if err != nil || len(rep.Findings) != 0 || len(rep.Files) != 1 || rep.Deliverable() != 10 || !rep.State {
		t.Fatalf("clean: %v %+v", err, rep)
	}
	path := filepath.Join(dir, "spill-1-2")
	orig, _ := os.ReadFile(path)

	// A flipped byte inside record 6: damage at its offset, that record
	// skipped, the 9 others deliverable.
	b := bytes.Clone(orig)
	b[offs[6]+recHead+3] ^= 0x40
	os.WriteFile(path, b, 0o644)
	rep, err = CheckSpill(dir)
	if err != nil || !rep.Damaged() || rep.Findings[0].File != path || rep.Findings[0].Offset != offs[6] || rep.Deliverable() != 9 ||
		rep.Files[0].Skipped != offs[7]-offs[6] || rep.Files[0].Regions != 1 {
		t.Fatalf("flipped record: %v %+v", err, rep)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Fatal("CheckSpill changed the spill file")
	}

	// The last record cut short: a crash leftover, not damage.
	os.WriteFile(path, orig[:len(orig)-3], 0o644)
	rep, err = CheckSpill(dir)
	if err != nil || rep.Damaged() || len(rep.Findings) != 1 || rep.Findings[0].Offset != offs[9] || rep.Deliverable() != 9 {
		t.Fatalf("torn tail: %v %+v", err, rep)
	}
	os.WriteFile(path, orig, 0o644)

	// A flipped byte in the state file.
	sp := filepath.Join(dir, "state")
	sb, _ := os.ReadFile(sp)
	sb[25] ^= 1
	os.WriteFile(sp, sb, 0o644)
	rep, err = CheckSpill(dir)
	if err != nil || !rep.Damaged() || rep.Findings[0].File != sp {
		t.Fatalf("flipped state: %v %+v", err, rep)
	}
}

// FuzzCheckSpill: for any bytes as a spill file, CheckSpill reports a
// finding exactly when the endpoint's own open reports a problem, and
// counts as deliverable exactly the items the endpoint reads back.
func FuzzCheckSpill(f *testing.F) {
	dir, _ := spillFixture(f)
	good, _ := os.ReadFile(filepath.Join(dir, "spill-1-2"))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(spillHeaderBytes(1, 2))
	maxURL := MaxItemLen(DefaultPayload)
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "spill-1-2"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := CheckSpill(dir)
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, "spill-1-2")); !bytes.Equal(after, b) {
			t.Fatal("CheckSpill changed the file")
		}
		s, err := openSpill(dir, 1, 2, maxURL, 0)
		if errors.Is(err, errSpillNewer) && rep.Damaged() {
			return // a later build's file, whole: refused by both
		}
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		if (len(rep.Findings) > 0) != (len(s.errs) > 0) {
			t.Fatalf("check found %v, open reported %q", rep.Findings, s.errs)
		}
		var q queue
		for i := 0; s.unread(); i++ {
			if i > len(b) {
				t.Fatal("reader does not advance")
			}
			if err := s.readChunk(&q, 4096); err != nil {
				t.Fatal(err)
			}
		}
		if q.len() != rep.Deliverable() {
			t.Fatalf("read %d items back; check says %d are deliverable", q.len(), rep.Deliverable())
		}
	})
}

// TestCheckSpillLongItem: an item longer than an endpoint of the default
// Payload sends (one of Payload 1472 wrote it) was counted deliverable by
// kspider check, while such an endpoint's open (a cluster node's) skips it
// as damage; now check reports it as the open does.
func TestCheckSpillLongItem(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, MaxItemLen(MaxPayload), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.append(1, []byte(testURL(1, 2, 1)))
	long := MaxItemLen(DefaultPayload) + 100
	s.append(2, bytes.Repeat([]byte("l"), long))
	s.append(3, []byte(testURL(1, 2, 3)))
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err = openSpill(dir, 1, 2, MaxItemLen(DefaultPayload), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if !rep.Damaged() || rep.Deliverable() != 2 || len(s.errs) != 1 || s.unreadItems != 2 {
		t.Fatalf("check: %d deliverable, findings %v; the endpoint's open: %d unread, %q", rep.Deliverable(), rep.Findings, s.unreadItems, s.errs)
	}
}
