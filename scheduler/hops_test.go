package scheduler

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordHops: the redirects counted in a record survive every change
// of state, retries and depth, and a gap record keeps the bits of every
// format version.
func TestRecordHops(t *testing.T) {
	r := makeRecord(9, InList, 2, 7, gapHost-1).withHops(9, 10)
	if err := checkRecord(9, r); err != nil || r.hops() != 10 || r.host() != gapHost-1 || r.depth() != 7 || r.retries() != 2 {
		t.Fatalf("%x: %v, hops %d host %d depth %d retries %d", r, err, r.hops(), r.host(), r.depth(), r.retries())
	}
	if r = r.with(9, Stalled, 3).withDepth(9, 1); r.hops() != 10 || r.state() != Stalled || r.depth() != 1 || checkRecord(9, r) != nil {
		t.Fatalf("after with, withDepth: %x hops %d", r, r.hops())
	}
	if h := makeRecord(9, InList, 0, 0, 1).withHops(9, 200).hops(); h != MaxHops {
		t.Fatalf("200 hops stored as %d, want %d", h, MaxHops)
	}
	// Format version 3's gap: depth 255 and host 2^32-1 in bits 16..47.
	if p := gapRecord(5).payload(); p != 255<<8|0xffffffff<<16 {
		t.Fatalf("gap payload %#x", p)
	}
}

// TestHopsSurviveReopen: a redirect's count goes with its URL's record
// through its list, a lowered depth and a reopen; before, it lived in the
// node's memory, and a restart began the chain's count again.
func TestHopsSurviveReopen(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	if added, err := s.AddRedirect(0, "a.example", 3, 7); err != nil || !added {
		t.Fatalf("AddRedirect: %v %v", added, err)
	}
	if _, err := s.Add(1, "a.example", 3); err != nil {
		t.Fatal(err)
	}
	if added, err := s.AddRedirect(0, "a.example", 3, 2); err != nil || added {
		t.Fatalf("AddRedirect again: %v %v", added, err)
	}
	if _, _, err := s.Lower(0, 1); err != nil {
		t.Fatal(err)
	}
	ls := drain(t, s)
	if len(ls) != 1 || len(ls[0].IDs) != 2 {
		t.Fatalf("lists %+v", ls)
	}
	if err := s.Report(0, Outcome{Kind: FailedTemp}); err != nil {
		t.Fatal(err)
	}
	if h0, h1 := s.Hops(0), s.Hops(1); h0 != 7 || h1 != 0 {
		t.Fatalf("hops %d %d, want 7 0", h0, h1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if h, u := s.Hops(0), s.URL(0); h != 7 || u.Depth != 1 || u.State != Stalled {
		t.Fatalf("after reopen: hops %d, %+v", h, u)
	}
	if h := s.Hops(99); h != 0 {
		t.Fatalf("hops of an id never added: %d", h)
	}
}

// TestVersion3StatesRead: a states file of format version 3 is read as it
// is, and given the version 4 header, so a build of before refuses it; a
// version 3 record naming a host of 2^28 or more is damage, not hops.
func TestVersion3StatesRead(t *testing.T) {
	dir, b := gapFixture(t)
	path := filepath.Join(dir, statesName)
	setVersion := func(b []byte, v uint32) {
		binary.LittleEndian.PutUint32(b[8:], v)
		binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	}
	setVersion(b, 3)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if s.Len() != 30 || s.URL(21).State != InList || s.Hops(21) != 0 {
		t.Fatalf("version 3: len %d, id 21 %+v hops %d", s.Len(), s.URL(21), s.Hops(21))
	}
	s.Close()
	after, _ := os.ReadFile(path)
	if v := headerVersion(after); v != FormatVersion {
		t.Fatalf("after Open the states file is version %d, want %d", v, FormatVersion)
	}

	r := record(binary.LittleEndian.Uint64(b[headerSize+8*21:]))
	p := r.payload() | 1<<44 // host 2^28 + its number
	binary.LittleEndian.PutUint64(b[headerSize+8*21:], p|recordCheck(21, p)<<payloadBits)
	setVersion(b, 3)
	os.WriteFile(path, b, 0o644)
	_, err := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "id 21 names host 268435") {
		t.Fatalf("version 3 record of host 2^28+: %v", err)
	}
}

// TestRepairVersion3Host: kspider check --repair of a version 3 states file
// whose only damage is a record naming a host of 2^28 or more makes that
// record a gap; the salvage read the host as 28 bits, as version 4 does, and
// kept the record, which Open then refused again.
func TestRepairVersion3Host(t *testing.T) {
	dir, b := gapFixture(t)
	path := filepath.Join(dir, statesName)
	r := record(binary.LittleEndian.Uint64(b[headerSize+8*21:]))
	p := r.payload() | 1<<44 // host 2^28 + its number, below nHosts as 28 bits
	binary.LittleEndian.PutUint64(b[headerSize+8*21:], p|recordCheck(21, p)<<payloadBits)
	binary.LittleEndian.PutUint32(b[8:], 3)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired || rep.Salvaged != 1 {
		t.Fatalf("repair: %v, %+v; want 1 record salvaged", err, rep)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	defer s.Close()
	if s.Len() != 30 || s.URL(21) != (URLInfo{}) || s.URL(22).State != InList {
		t.Errorf("after the repair: %d URLs, URL 21 %+v, URL 22 %+v", s.Len(), s.URL(21), s.URL(22))
	}
}
