package scheduler

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gapFixture builds a closed scheduler whose ids 0..9 and 20..29 were
// added and 10..19 skipped (an Add of 20 before them), and returns its
// directory and states file contents.
func gapFixture(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	for _, id := range []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29} {
		if _, err := s.Add(id, fmt.Sprintf("h%d.example", id%3), 1); err != nil {
			t.Fatal(err)
		}
	}
	if u := s.URL(15); u != (URLInfo{}) {
		t.Fatalf("skipped id 15: %+v, want the zero URLInfo", u)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, statesName))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if binary.LittleEndian.Uint64(b[headerSize+8*i:]) == 0 {
			t.Fatalf("record %d of the 30 committed ones is zero", i)
		}
	}
	return dir, b
}

// TestZeroedStateRecord: a whole record zeroed inside the committed part,
// an added URL's or a gap's, is damage for Open and Check, named with the
// file and its offset; past the commit zeros are ids never written.
func TestZeroedStateRecord(t *testing.T) {
	for _, id := range []int{0, 7, 15, 29} {
		dir, b := gapFixture(t)
		path := filepath.Join(dir, statesName)
		clear(b[headerSize+8*id : headerSize+8*id+8])
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		off := fmt.Sprintf("offset %d", headerSize+8*id)
		_, err := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), off) {
			t.Errorf("id %d zeroed: Open = %v, want ErrCorrupt naming %s at %s", id, err, path, off)
		}
		rep, err := Check(dir, false)
		if err != nil || !rep.Damaged() || rep.Findings[0].File != path || rep.Findings[0].Offset != int64(headerSize+8*id) {
			t.Errorf("id %d zeroed: Check = %v %v", id, err, rep.Findings)
		}
	}
	// Eight records zeroed at once: one finding for the run.
	dir, b := gapFixture(t)
	clear(b[headerSize+8*12 : headerSize+8*20])
	os.WriteFile(filepath.Join(dir, statesName), b, 0o644)
	rep, err := Check(dir, false)
	if err != nil || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].What, "ids 12 to 19") {
		t.Errorf("records 12..19 zeroed: %v %v", err, rep.Findings)
	}
}

// TestVersion1States: a version 1 states file (zero records for ids never
// added) is read, converted to version 2 by Open, and then checks clean.
func TestVersion1States(t *testing.T) {
	dir, _ := gapFixture(t)
	setOldHeaders(t, dir)
	path := filepath.Join(dir, statesName)
	b, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(b[8:], 1)
	clear(b[headerSize+8*10 : headerSize+8*20])
	os.WriteFile(path, b, 0o644)
	if rep, err := Check(dir, false); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("version 1 file: Check = %v %v", err, rep.Findings)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if !s.Opened().Converted || s.Len() != 30 || s.URL(15) != (URLInfo{}) || s.URL(21).State != InList {
		t.Errorf("opened: %+v, len %d, id 15 %+v, id 21 %+v", s.Opened(), s.Len(), s.URL(15), s.URL(21))
	}
	s.Close()
	b, _ = os.ReadFile(path)
	if v := binary.LittleEndian.Uint32(b[8:]); v != FormatVersion { // with no TreeID, no ID; the version 4 header all the same (upgradeStates)
		t.Errorf("after Open the states file is version %d", v)
	}
	if rep, err := Check(dir, false); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("converted file: Check = %v %v", err, rep.Findings)
	}
	// A version newer than this build's is refused, naming both.
	binary.LittleEndian.PutUint32(b[8:], FormatVersion+1)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	os.WriteFile(path, b, 0o644)
	_, err := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", FormatVersion+1)) || !strings.Contains(err.Error(), fmt.Sprintf("1 to %d", FormatVersion)) {
		t.Errorf("version %d: %v", FormatVersion+1, err)
	}
}

// TestDroppedBecomesGap: a record past the commit whose host did not
// survive a crash becomes a gap, not a zero, so the next commit covering
// it checks clean.
func TestDroppedBecomesGap(t *testing.T) {
	recs := []record{makeRecord(0, InList, 0, 1, 0), makeRecord(1, InList, 0, 1, 5), makeRecord(2, InList, 0, 1, 0)}
	ss, err := decodeStates("x", 2, recs, 1, 1, nil)
	if err != nil || ss.dropped != 1 || ss.count != 3 || recs[1] != gapRecord(1) {
		t.Fatalf("%v %+v %x", err, ss, recs)
	}
	if _, err := decodeStates("x", 2, recs, 3, 1, nil); err != nil {
		t.Fatal(err)
	}
}

// TestSwappedCommitSlots: commit n lives in slot n mod 2, so slots swapped
// (a misdirected write) are damage Check names, though each verifies.
func TestSwappedCommitSlots(t *testing.T) {
	dir, _ := gapFixture(t)
	path := filepath.Join(dir, metaName)
	b, _ := os.ReadFile(path)
	x := append([]byte(nil), b[512:512+metaSlotSize]...)
	copy(b[512:], b[1024:1024+metaSlotSize])
	copy(b[1024:], x)
	os.WriteFile(path, b, 0o644)
	rep, err := Check(dir, false)
	if err != nil || !rep.Damaged() || rep.Findings[0].File != path || !strings.Contains(rep.Findings[0].What, "in the slot of commits") {
		t.Fatalf("swapped slots: %v %v", err, rep.Findings)
	}
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0))) // the commits themselves verify
	if s.Len() != 30 {
		t.Errorf("after swapped slots: %d URLs", s.Len())
	}
	s.Close()
}

// TestRepairMetaSlot: one commit slot damaged, the other valid. Open uses
// the valid one; a repair moved all four files away, and the next Open
// started an empty scheduler (30 URLs lost). Now the repair writes both
// slots anew from the valid commit, keeping the old meta file.
func TestRepairMetaSlot(t *testing.T) {
	for _, slot := range []int64{512, 1024} {
		dir, _ := gapFixture(t)
		path := filepath.Join(dir, metaName)
		orig, _ := os.ReadFile(path)
		b := bytes.Clone(orig)
		b[slot+9] ^= 0x40
		os.WriteFile(path, b, 0o644)
		rep, err := Check(dir, true)
		if err != nil || !rep.Damaged() || !rep.Repaired || !rep.MetaRewritten {
			t.Fatalf("slot at %d: repair: %v %+v", slot, err, rep)
		}
		if rep2, err := Check(dir, false); err != nil {
			t.Errorf("slot at %d: after repair: %v", slot, err)
		} else if rep2.Damaged() {
			t.Errorf("slot at %d: after repair: %v", slot, rep2.Findings)
		}
		if got, err := os.ReadFile(filepath.Join(rep.Quarantine, metaName)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("slot at %d: the damaged meta file not kept in %s: %v", slot, rep.Quarantine, err)
		}
		s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
		if s.Len() != 30 || s.URL(29).State != InList {
			t.Errorf("slot at %d: after repair %d URLs, URL 29 %+v; want 30, in-list", slot, s.Len(), s.URL(29))
		}
		s.Close()
	}
}

// setOldHeaders writes the headers of the scheduler in dir as they were
// before format version 3: no ID, no checksum, the newest version of each
// file before it.
func setOldHeaders(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []struct {
		name  string
		magic [8]byte
	}{{metaName, magicMeta}, {statesName, magicStates}, {hostsName, magicHosts}, {namesName, magicNames}} {
		path := filepath.Join(dir, f.name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[8:], oldVersion(f.magic))
		clear(b[12:headerSize])
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
