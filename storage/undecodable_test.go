package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Records whose CRC holds but whose body their codec cannot decode.

// undecodable makes the LZO record at l one whose CRC holds but whose body
// cannot be decoded: one byte more raw body than its stream gives, the CRC
// computed again.
func undecodable(t *testing.T, dir string, l location) {
	t.Helper()
	path := segmentPath(dir, l.seg)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := data[l.off:]
	h, err := parseRecordHeader(rec)
	if err != nil || h.codec != CodecLZO {
		t.Fatalf("the record at %s offset %d: codec %v, %v; want an LZO body", path, l.off, h.codec, err)
	}
	rec = rec[:h.length]
	binary.LittleEndian.PutUint32(rec[48:], h.rawLen+1)
	binary.LittleEndian.PutUint32(rec[8:], recordCRC(h.version, rec))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A record whose CRC holds but whose body its codec cannot decode (a
// writer's bug, or bytes forged with their CRC) was counted by a Scan as
// a record the index points at before it was decoded: it then stood in
// for an index entry pointing at no record, so such an entry (a page
// lost) went unreported and uncounted. Now only a page decoded counts.
func TestUndecodableRecordHidesNoDanglingEntry(t *testing.T) {
	const n = 50
	dir, locs := damagedStore(t, n)
	l := locs[12]
	path := segmentPath(dir, l.seg)
	undecodable(t, dir, l)
	// An entry of an id never stored, pointing into page 30's record.
	ix, err := openIndex(filepath.Join(dir, indexName), true)
	if err != nil {
		t.Fatal(err)
	}
	const stray = n + 10
	ck := location{ix.ckSeg, ix.ckOff}
	if err := ix.set(stray, locs[30].seg, locs[30].off+8); err != nil {
		t.Fatal(err)
	}
	if err := ix.setCheckpoint(ck.seg, ck.off); err != nil {
		t.Fatal(err)
	}
	ix.close()

	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Get's error said "lzo body of page 12" and not where it was.
	if p, err := r.Get(12); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%s at offset %d", path, l.off)) {
		t.Errorf("Get(12) = %v, %v; want damage naming %s and offset %d", p, err, path, l.off)
	}
	if seen := scanAll(t, r); len(seen) != n-1 || seen[12] {
		t.Fatalf("scan saw %d pages (page 12: %v), want %d without page 12", len(seen), seen[12], n-1)
	}
	st := r.Stats()
	if st.Lost != 2 || !strings.Contains(fmt.Sprint(st.Errors), "point at no record") {
		t.Fatalf("lost %d, want 2 (page 12 and id %d), with the entry pointing at no record reported: %v", st.Lost, uint64(stray), st.Errors)
	}
}

// kspider check --repair kept a record whose body cannot be decoded (its
// CRC holds), as it keeps every record passing its checks, so the check
// after the repair found the same damage and the repair failed ("1
// problems remain after the repair"), every time: the store could never be
// made clean, and stats and export exited 1 for good. Now the repair takes
// such a record for damaged: the segment is rewritten without it, the
// original moved into damaged/.
func TestRepairDropsUndecodableRecord(t *testing.T) {
	const n = 50
	dir, locs := damagedStore(t, n)
	undecodable(t, dir, locs[12])
	if problems, err := Check(dir, false, io.Discard); problems == 0 || err != nil {
		t.Fatalf("check: %d problems, %v; want the record reported", problems, err)
	}
	var out strings.Builder
	if _, err := Check(dir, true, &out); err != nil {
		t.Fatalf("check --repair: %v\n%s", err, out.String())
	}
	if problems, err := Check(dir, false, &out); problems != 0 || err != nil {
		t.Fatalf("check after the repair: %d problems, %v\n%s", problems, err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, DamagedDir, segmentName(locs[12].seg))); err != nil {
		t.Errorf("the original segment is not in %s: %v", DamagedDir, err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Get(12); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(12) after the repair: %v, want ErrNotFound", err)
	}
	if seen := scanAll(t, r); len(seen) != n-1 {
		t.Errorf("scan after the repair: %d pages, want %d", len(seen), n-1)
	}
}

// A record whose body cannot be decoded (its CRC intact) at the end of the
// last segment, after the index checkpoint, was taken for a torn tail:
// kspider check said "all of it is what a write cut short by a crash
// leaves: the next writer mends it", which no writer does (the record
// passes its checks), and a Reader on the live store only noted it. It is
// damage like any other undecodable record.
func TestUndecodableLastRecordIsNoTornTail(t *testing.T) {
	const n = 30
	// One compressor: the records in the order of their ids, the last one
	// page 29's, which has a body (the last record written by several
	// could be a page without one, stored uncompressed).
	dir, spans := layoutStore(t, Config{Compressors: 1}, n)
	last := location{spans[n-1].seg, spans[n-1].off}
	for _, sp := range spans {
		if last.before(location{sp.seg, sp.off}) {
			t.Fatalf("page %d's record is not the last", n-1)
		}
	}
	ix, err := openIndex(filepath.Join(dir, indexName), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.setCheckpoint(last.seg, last.off); err != nil { // as a crash before the last checkpoint leaves it
		t.Fatal(err)
	}
	ix.close()
	undecodable(t, dir, last)
	var out strings.Builder
	problems, err := Check(dir, false, &out)
	if problems == 0 || err != nil || strings.Contains(out.String(), "next writer mends it") {
		t.Fatalf("check: %d problems, %v:\n%s\nwant the record reported as damage, not a torn tail", problems, err, out.String())
	}
}
