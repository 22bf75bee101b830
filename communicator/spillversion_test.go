package communicator

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"testing"
)

// readAllSpill reads every unread item of s back, by tag.
func readAllSpill(t *testing.T, s *spill) []uint64 {
	t.Helper()
	var q queue
	for i := 0; s.unread(); i++ {
		if i > 1000 {
			t.Fatal("reader does not advance")
		}
		s.readChunk(&q, 4096)
	}
	var tags []uint64
	for k := range q.len() {
		tags = append(tags, q.items[q.head+k].tag)
	}
	return tags
}

// TestSpillRecordsSwapped: two whole item records of one length swapped,
// one before the last mark (acknowledged) and one after it, each with its
// own checksum, were read as intact: the acknowledged item was delivered
// again, the other lost, and neither the open nor CheckSpill said a word.
// Now a record's checksum covers its offset: both are skipped as damage,
// reported, and the acknowledged item is not delivered again.
func TestSpillRecordsSwapped(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k := range 8 {
		if k == 3 {
			s.mark(s.end, false) // items 0..2 acknowledged
		}
		offs = append(offs, s.end)
		s.append(uint64(k), []byte(testURL(1, 2, k)))
	}
	offs = append(offs, s.end)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	path := spillPath(dir, 1, 2)
	b, _ := os.ReadFile(path)
	one, five := bytes.Clone(b[offs[1]:offs[2]]), bytes.Clone(b[offs[5]:offs[6]])
	if len(one) != len(five) {
		t.Fatalf("records of %d and %d bytes", len(one), len(five))
	}
	copy(b[offs[1]:], five)
	copy(b[offs[5]:], one)
	os.WriteFile(path, b, 0o644)

	rep, err := CheckSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err = openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	got := readAllSpill(t, s)
	want := []uint64{3, 4, 6, 7}
	if !slices.Equal(got, want) || len(s.errs) == 0 || !rep.Damaged() || rep.Deliverable() != len(want) {
		t.Fatalf("read back %v (want %v), open reported %q, check found %v (%d deliverable)", got, want, s.errs, rep.Findings, rep.Deliverable())
	}
}

// v1Record is a record of spill format version 1: its checksum covers the
// payload alone.
func v1Record(payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// TestSpillVersion1: a spill file written before the format bound each
// record's checksum to its offset is read as it was written, appended to
// in its own format, and becomes version 2 once all of it is acknowledged.
func TestSpillVersion1(t *testing.T) {
	dir := t.TempDir()
	b := spillHeaderOf(1, 1, 2)
	var mark [9]byte
	for k := range 4 {
		if k == 2 {
			mark[0] = recMark
			binary.BigEndian.PutUint64(mark[1:], uint64(len(b)))
			b = append(b, v1Record(mark[:])...)
		}
		b = append(b, v1Record(append([]byte{recItem, byte(k)}, testURL(1, 2, k)...))...)
	}
	path := spillPath(dir, 1, 2)
	os.WriteFile(path, b, 0o644)
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllSpill(t, s); !slices.Equal(got, []uint64{2, 3}) || len(s.errs) > 0 || s.version != 1 {
		t.Fatalf("version 1 file: read back %v, errors %q, version %d", got, s.errs, s.version)
	}
	s.append(4, []byte(testURL(1, 2, 4)))
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	s, err = openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllSpill(t, s); !slices.Equal(got, []uint64{2, 3, 4}) || len(s.errs) > 0 {
		t.Fatalf("version 1 file appended to: read back %v, errors %q", got, s.errs)
	}
	if err := s.mark(s.end, true); err != nil {
		t.Fatal(err)
	}
	s.append(5, []byte(testURL(1, 2, 5)))
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); binary.BigEndian.Uint16(b[4:]) != spillVersion {
		t.Fatalf("emptied file's header %x: still version %d", b[:spillHeader], binary.BigEndian.Uint16(b[4:]))
	}
	s, err = openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if got := readAllSpill(t, s); !slices.Equal(got, []uint64{5}) || len(s.errs) > 0 || s.version != spillVersion {
		t.Fatalf("after the upgrade: read back %v, errors %q, version %d", got, s.errs, s.version)
	}
	if rep, err := CheckSpill(dir); err != nil || len(rep.Findings) > 0 || rep.Deliverable() != 1 {
		t.Fatalf("check: %v, %v", err, rep.Findings)
	}
}

// TestSpillNewerVersionRefused: a spill file of a later format version,
// its header whole (a build rolled back), was taken for damage: moved
// aside to .bad-0 and its items never delivered, the start going on; now
// the start is refused, naming the file and the versions, the file left
// for the build that reads it, and check says so.
func TestSpillNewerVersionRefused(t *testing.T) {
	dir := t.TempDir()
	path := spillPath(dir, 1, 2)
	b := append(spillHeaderOf(spillVersion+1, 1, 2), v1Record(append([]byte{recItem, 0}, "http://a.example/"...))...)
	os.WriteFile(path, b, 0o644)
	rep, err := CheckSpill(dir)
	if err != nil || !rep.Damaged() || !strings.Contains(fmt.Sprint(rep.Findings), fmt.Sprintf("format version %d", spillVersion+1)) {
		t.Errorf("check: %v, %v", err, rep.Findings)
	}
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err == nil {
		s.close()
	}
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", spillVersion+1)) {
		t.Fatalf("open of a version %d file: %v", spillVersion+1, err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, b) {
		t.Fatalf("the refused file was changed or moved: %v", err)
	}
}

// TestSpillVersion1Compacted: a version 1 file rewritten without its
// acknowledged part (spillcompact.go) becomes version 2, every record
// given the checksum of its new place: read on in this run and the next
// without a word.
func TestSpillVersion1Compacted(t *testing.T) {
	dir := t.TempDir()
	b := spillHeaderOf(1, 1, 2)
	var last int64
	for k := range 60 {
		last = int64(len(b))
		b = append(b, v1Record(append([]byte{recItem, byte(k)}, testURL(1, 2, k)...))...)
	}
	path := spillPath(dir, 1, 2)
	os.WriteFile(path, b, 0o644)
	s, err := openSpill(dir, 1, 2, 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.compactAt = 1
	got := readAllSpill(t, s)
	s.append(60, []byte(testURL(1, 2, 60)))
	if gone, err := s.compact(last); err != nil || gone != last-spillHeader || s.version != spillVersion {
		t.Fatalf("compact: moved %d, %v, version %d", gone, err, s.version)
	}
	got = append(got, readAllSpill(t, s)...)
	if len(got) != 61 || len(s.errs) > 0 {
		t.Fatalf("read %d items back, errors %q", len(got), s.errs)
	}
	s.close()
	if s, err = openSpill(dir, 1, 2, 1000, 0); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if got := readAllSpill(t, s); !slices.Equal(got, []uint64{59, 60}) || len(s.errs) > 0 || s.version != spillVersion {
		t.Fatalf("the rewritten file: read back %v, errors %q, version %d", got, s.errs, s.version)
	}
}

// TestCheckSpillSaysVersion1: kspider check read a spill file of format
// version 1 (a build before version 2 wrote it; its records' checksums do
// not bind them to their offsets) without a word, so an operator could
// not tell which files still were; now SpillFileReport.Version says, and a
// note names each such file.
func TestCheckSpillSaysVersion1(t *testing.T) {
	dir := t.TempDir()
	b := spillHeaderOf(1, 1, 2)
	b = append(b, v1Record(append([]byte{recItem, 0}, testURL(1, 2, 0)...))...)
	if err := os.WriteFile(spillPath(dir, 1, 2), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := openSpill(dir, 1, 3, 1000, 0) // a version 2 file beside it
	if err != nil {
		t.Fatal(err)
	}
	s.append(0, []byte(testURL(1, 3, 0)))
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 2 || rep.Files[0].Version != 1 || rep.Files[1].Version != spillVersion || rep.Deliverable() != 2 {
		t.Fatalf("files %+v; want spill-1-2 of version 1 and spill-1-3 of version %d, 2 items deliverable", rep.Files, spillVersion)
	}
	if len(rep.Findings) != 1 || rep.Damaged() || rep.Findings[0].File != rep.Files[0].Path || !strings.Contains(rep.Findings[0].What, "format version 1") {
		t.Fatalf("findings %v; want one note naming spill-1-2's format version 1", rep.Findings)
	}
}
