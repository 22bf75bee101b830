package communicator

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateFixture returns the bytes of a state file whose two slots differ:
// slot 0 holds the first save (epoch 5, one entry), slot 1 the second
// (epoch 7, three entries), written in place.
func stateFixture(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	st, err := openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(5, []stateEntry{{2, 5, 8}}); err != nil {
		t.Fatal(err)
	}
	if err := st.save(7, []stateEntry{{2, 5, 9}, {3, 6, 1}, {9, 1 << 40, 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	st.close()
	b, err := os.ReadFile(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 2*stateSlotAlign {
		t.Fatalf("state file of %d bytes, want two %d-byte slots", len(b), stateSlotAlign)
	}
	return b
}

// stateV1 is a version 1 state file (one CRC over it all) of ents.
func stateV1(epoch uint64, ents []stateEntry) []byte {
	b := append([]byte(stateMagic), 0, 0, 0, stateVersion1)
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ents)))
	for _, e := range ents {
		b = binary.BigEndian.AppendUint16(b, uint16(e.id))
		b = binary.BigEndian.AppendUint64(b, e.epoch)
		b = binary.BigEndian.AppendUint32(b, e.cum)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// checkStateBytes: parse never panics. Of the fixture's two slots, a file
// with only one of them changed opens with the other and reports the bad
// one (offset inside it; CheckSpill: damage in the file); both changed,
// or the size changed, is refused with an offset inside the file.
func checkStateBytes(t *testing.T, orig, b []byte) {
	t.Helper()
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	off, err := s.parse(b)
	slot := len(orig) / 2
	same0 := len(b) == len(orig) && bytes.Equal(b[:slot], orig[:slot])
	same1 := len(b) == len(orig) && bytes.Equal(b[slot:], orig[slot:])
	switch {
	case same0 && same1:
		if err != nil || len(s.entries) != 3 || s.last != 7 || len(s.warnings) != 0 {
			t.Fatalf("intact state file: %v %+v", err, s)
		}
		return
	case same1: // slot 0 bad: the newer slot 1 is used
		if err != nil || len(s.entries) != 3 || s.last != 7 || len(s.warnings) != 1 || s.warnings[0].off >= int64(slot) {
			t.Fatalf("slot 0 damaged: %v %+v", err, s)
		}
	case same0: // slot 1 bad: the older slot 0 is used
		if err != nil || len(s.entries) != 1 || s.entries[2].cum != 8 || s.last != 5 || len(s.warnings) != 1 ||
			s.warnings[0].off < int64(slot) || s.warnings[0].off >= int64(len(b)) {
			t.Fatalf("slot 1 damaged: %v %+v", err, s)
		}
	default:
		if err == nil {
			t.Fatalf("state file with both slots changed accepted: %+v", s)
		}
		if off < 0 || off > int64(len(b)) {
			t.Fatalf("offset %d outside the %d-byte file", off, len(b))
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state"), b, 0o644)
	rep, err := CheckSpill(dir)
	if err != nil || !rep.Damaged() || rep.Findings[0].File != filepath.Join(dir, "state") || rep.Findings[0].Offset > int64(len(b)) {
		t.Fatalf("CheckSpill: %v %+v", err, rep)
	}
}

// checkStateV1Bytes: a version 1 file that is not the original is refused
// with an offset inside it (one CRC-32C covers it all).
func checkStateV1Bytes(t *testing.T, orig, b []byte) {
	t.Helper()
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	off, err := s.parse(b)
	if bytes.Equal(b, orig) {
		if err != nil || len(s.entries) != 3 || s.last != 7 {
			t.Fatalf("intact version 1 state file: %v %+v", err, s)
		}
		return
	}
	if err == nil {
		t.Fatalf("changed version 1 state file accepted: %x", b)
	}
	if off < 0 || off > int64(len(b)) {
		t.Fatalf("offset %d outside the %d-byte file", off, len(b))
	}
}

// damage applies random bit flips, zeroed ranges, truncation, appended
// junk and swapped blocks to orig and hands each result to check.
func damage(orig []byte, seed uint64, check func(b []byte)) {
	rng := rand.New(rand.NewPCG(seed, 6))
	for range 40 {
		b := bytes.Clone(orig)
		i := rng.IntN(len(b))
		b[i] ^= 1 << rng.IntN(8)
		check(b)
		b = bytes.Clone(orig)
		clear(b[i:min(len(b), i+1+rng.IntN(16))])
		check(b)
		check(orig[:i])
		check(append(bytes.Clone(orig), byte(rng.Uint32()), byte(rng.Uint32())))
		b = bytes.Clone(orig)
		j, n := rng.IntN(len(b)-4), 4
		if i+n <= len(b) && (i+n <= j || j+n <= i) {
			x := bytes.Clone(b[i : i+n])
			copy(b[i:], b[j:j+n])
			copy(b[j:], x)
			check(b)
		}
	}
}

// TestStateFileDamage: bit flips, zeroed ranges, truncation, appended junk
// and swapped blocks at random positions: one slot damaged, the other is
// used and the damage reported; both, or the file's size, a clear error.
// Damage in the header of each slot, and in both, is tried too.
func TestStateFileDamage(t *testing.T) {
	orig := stateFixture(t)
	damage(orig, 5, func(b []byte) { checkStateBytes(t, orig, b) })
	slot := len(orig) / 2
	for _, at := range []int{0, 8, 12, 16, 24, 32, 36, slot - 4} {
		for _, both := range []bool{false, true} {
			b := bytes.Clone(orig)
			b[slot+at] ^= 0x10
			if both {
				b[at] ^= 0x10
			}
			checkStateBytes(t, orig, b)
		}
	}
	// A newer version in both slots (their CRCs right) is refused naming
	// the versions.
	b := bytes.Clone(orig)
	for k := range 2 {
		p := b[k*slot : (k+1)*slot]
		binary.BigEndian.PutUint32(p[8:], 4)
		binary.BigEndian.PutUint32(p[slot-4:], crc32.Checksum(p[:slot-4], castagnoli))
	}
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	if _, err := s.parse(b); err == nil || !strings.Contains(err.Error(), "format version 4 at offset 8; this build reads versions 1, 2 and 3") {
		t.Fatalf("version 4: %v", err)
	}

	// Version 1 files: any change refused.
	v1 := stateV1(7, []stateEntry{{2, 5, 9}, {3, 6, 1}, {9, 1 << 40, 1 << 30}})
	damage(v1, 7, func(b []byte) { checkStateV1Bytes(t, v1, b) })
}

// TestStateFileV1: a version 1 file opens, and the next save rewrites it
// as version 3 with the same positions; then saves go in place, to the
// older slot, alternating, and a torn write of one leaves the last one.
func TestStateFileV1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	ents := []stateEntry{{2, 5, 9}, {3, 6, 1}}
	os.WriteFile(path, stateV1(7, ents), 0o644)
	st, err := openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := st.entry(3); !ok || e != ents[1] || st.last != 7 || st.f != nil {
		t.Fatalf("version 1 read: %+v", st)
	}
	if err := st.save(8, st.list()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if len(b) != 2*stateSlotAlign || binary.BigEndian.Uint32(b[8:]) != stateVersion {
		t.Fatalf("not rewritten as version 3: %d bytes, version %d", len(b), binary.BigEndian.Uint32(b[8:]))
	}
	fi, _ := os.Stat(path)
	for k := range 5 {
		if err := st.save(uint64(9+k), []stateEntry{{2, 5, uint32(10 + k)}, {3, 6, 1}}); err != nil {
			t.Fatal(err)
		}
		if st.cur != (k+1)%2 {
			t.Fatalf("save %d went to slot %d", k, st.cur)
		}
	}
	// In place: the same file (inode), the same size.
	if fi2, _ := os.Stat(path); !os.SameFile(fi, fi2) || fi2.Size() != fi.Size() {
		t.Fatal("an in-place save replaced or resized the file")
	}
	st.close()
	// A torn write of the next save: the older slot (0) half written.
	b, _ = os.ReadFile(path)
	copy(b[100:stateSlotAlign], bytes.Repeat([]byte{0xee}, stateSlotAlign))
	os.WriteFile(path, b, 0o644)
	var logged []string
	st, err = openState(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range st.warnings {
		logged = append(logged, w.what)
	}
	if e, _ := st.entry(2); e.cum != 14 || st.last != 13 || len(logged) != 1 || !strings.Contains(logged[0], "slot 0: checksum mismatch") {
		t.Fatalf("after a torn slot 0: entry %+v, epoch %d, warnings %q", e, st.last, logged)
	}
	// The next save heals the torn slot.
	if err := st.save(14, st.list()); err != nil {
		t.Fatal(err)
	}
	st.close()
	if st, err = openState(dir, 1); err != nil || len(st.warnings) != 0 || st.last != 14 {
		t.Fatalf("after the next save: %v %+v", err, st)
	}
	st.close()

	// Entries beyond a slot's room: the file is made whole again, larger.
	many := make([]stateEntry, 100)
	for i := range many {
		many[i] = stateEntry{NodeID(i), uint64(i), uint32(i)}
	}
	st, _ = openState(dir, 1)
	if err := st.save(15, many); err != nil {
		t.Fatal(err)
	}
	st.close()
	st, err = openState(dir, 1)
	if err != nil || len(st.entries) != 100 || st.slot != 3*stateSlotAlign {
		t.Fatalf("grown: %v, %d entries, slot %d", err, len(st.entries), st.slot)
	}
	st.close()
}

// FuzzStateFile: any bytes as a state file parse or are refused with an
// offset, never a panic; a damaged checksum of one slot is reported.
func FuzzStateFile(f *testing.F) {
	orig := stateFixture(f)
	f.Add(orig)
	f.Add(orig[:20])
	f.Add([]byte("kspstate"))
	f.Add(stateV1(7, []stateEntry{{2, 5, 9}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &stateFile{entries: map[NodeID]stateEntry{}}
		off, err := s.parse(b)
		if err != nil && (off < 0 || off > int64(len(b))) {
			t.Fatalf("offset %d outside the %d-byte file", off, len(b))
		}
		for _, w := range s.warnings {
			if w.off < 0 || w.off > int64(len(b)) {
				t.Fatalf("warning offset %d outside the %d-byte file", w.off, len(b))
			}
		}
		slot := len(orig) / 2
		if len(b) == len(orig) && bytes.Equal(b[:slot], orig[:slot]) && !bytes.Equal(b[slot:], orig[slot:]) &&
			bytes.Equal(b[slot:len(b)-4], orig[slot:len(orig)-4]) && (err != nil || len(s.warnings) != 1 || s.last != 5) {
			t.Fatalf("a changed checksum of slot 1: %v %+v", err, s)
		}
	})
}

// TestEndpointStateV1: an endpoint started on a version 1 state file takes
// its epoch and positions, and leaves a version 3 file holding them.
func TestEndpointStateV1(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	const oldEpoch = 1 << 60
	os.WriteFile(path, stateV1(oldEpoch, []stateEntry{{2, 77, 1234}}), 0o644)
	conns, addrs := loopbackConns(t, 2)
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Epoch() <= oldEpoch {
		t.Errorf("epoch %d not after the version 1 file's %d", ep.Epoch(), uint64(oldEpoch))
	}
	st := ep.Stats()
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	if _, err := s.parse(b); err != nil || binary.BigEndian.Uint32(b[8:]) != stateVersion || s.last != ep.Epoch() {
		t.Fatalf("after the endpoint: %v, version %d, epoch %d", err, binary.BigEndian.Uint32(b[8:]), s.last)
	}
	if e, ok := s.entry(2); !ok || e.epoch != 77 || e.cum != 1234 {
		t.Errorf("peer 2's position %+v %v, want epoch 77 cum 1234 (stats %+v)", e, ok, st.Peers)
	}
}

// TestStateDuplicateNode: a slot whose checksum holds but which names one
// node twice is damage, not the last entry taken: the other slot is used
// and the bad one reported; both such, or a version 1 file, is refused
// naming the file, the node and both entries' offsets.
func TestStateDuplicateNode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	open := func(b []byte) (*stateFile, error) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := openState(dir, 1)
		if s != nil {
			s.close()
		}
		return s, err
	}
	// Slot 1 of the fixture: epoch 7, nodes 2, 3, 9; node 3's entry made
	// node 2's, the checksum made anew.
	orig := stateFixture(t)
	slot := len(orig) / 2
	dup := func(b []byte, at int) {
		binary.BigEndian.PutUint16(b[at+stateSlotHead+stateEntrySize:], 2)
		binary.BigEndian.PutUint32(b[at+slot-4:], crc32.Checksum(b[at:at+slot-4], castagnoli))
	}
	b := bytes.Clone(orig)
	dup(b, slot)
	s, err := open(b)
	if err != nil || s.last != 5 || len(s.entries) != 1 || s.entries[2].cum != 8 || len(s.warnings) != 1 ||
		!strings.Contains(s.warnings[0].what, "two receive positions for node 2") {
		t.Fatalf("slot 1 naming node 2 twice: %v %+v", err, s)
	}
	if rep, err := CheckSpill(dir); err != nil || !rep.Damaged() || !strings.Contains(rep.Findings[0].What, "node 2") {
		t.Fatalf("CheckSpill: %v %+v", err, rep)
	}
	copy(b, b[slot:]) // both slots the same, both naming node 2 twice
	binary.BigEndian.PutUint64(b[16:], 1)
	binary.BigEndian.PutUint32(b[slot-4:], crc32.Checksum(b[:slot-4], castagnoli))
	if _, err := open(b); err == nil || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), fmt.Sprintf("node 2, entries at offsets %d and %d", stateSlotHead, stateSlotHead+stateEntrySize)) {
		t.Fatalf("both slots naming node 2 twice: %v", err)
	}
	if _, err := open(stateV1(3, []stateEntry{{2, 5, 9}, {4, 1, 1}, {2, 5, 1}})); err == nil ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "node 2, entries at offsets 24 and 52") {
		t.Fatalf("version 1 naming node 2 twice: %v", err)
	}
}
