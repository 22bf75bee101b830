package communicator

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stateFixture returns the bytes of a state file of three entries.
func stateFixture(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	st, err := openState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(7, []stateEntry{{2, 5, 9}, {3, 6, 1}, {9, 1 << 40, 1 << 30}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkStateBytes: parse never panics; a file that is not the original is
// refused with an offset inside it (one CRC-32C covers it all), and
// CheckSpill reports it as damage naming the file.
func checkStateBytes(t *testing.T, orig, b []byte) {
	t.Helper()
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	off, err := s.parse(b)
	if bytes.Equal(b, orig) {
		if err != nil || len(s.entries) != 3 || s.last != 7 {
			t.Fatalf("intact state file: %v %+v", err, s)
		}
		return
	}
	if err == nil {
		t.Fatalf("changed state file accepted: %x", b)
	}
	if off < 0 || off > int64(len(b)) {
		t.Fatalf("offset %d outside the %d-byte file", off, len(b))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state"), b, 0o644)
	rep, err := CheckSpill(dir)
	if err != nil || !rep.Damaged() || rep.Findings[0].File != filepath.Join(dir, "state") {
		t.Fatalf("CheckSpill: %v %+v", err, rep)
	}
}

// TestStateFileDamage: bit flips, zeroed ranges, truncation, appended junk
// and swapped blocks at random positions are all refused and reported.
func TestStateFileDamage(t *testing.T) {
	orig := stateFixture(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		b := bytes.Clone(orig)
		i := rng.IntN(len(b))
		b[i] ^= 1 << rng.IntN(8)
		checkStateBytes(t, orig, b)
		b = bytes.Clone(orig)
		clear(b[i:min(len(b), i+1+rng.IntN(16))])
		checkStateBytes(t, orig, b)
		checkStateBytes(t, orig, orig[:i])
		checkStateBytes(t, orig, append(bytes.Clone(orig), byte(rng.Uint32()), byte(rng.Uint32())))
		b = bytes.Clone(orig)
		j, n := rng.IntN(len(b)-4), 4
		if i+n <= len(b) && (i+n <= j || j+n <= i) {
			x := bytes.Clone(b[i : i+n])
			copy(b[i:], b[j:j+n])
			copy(b[j:], x)
			checkStateBytes(t, orig, b)
		}
	}
	// A newer version (its CRC right) is refused naming both versions.
	b := bytes.Clone(orig)
	binary.BigEndian.PutUint32(b[8:], 2)
	s := &stateFile{entries: map[NodeID]stateEntry{}}
	if _, err := s.parse(b); err == nil || !strings.Contains(err.Error(), "format version 2 at offset 8; this build reads version 1") {
		t.Fatalf("version 2: %v", err)
	}
}

// FuzzStateFile: any bytes as a state file parse or are refused with an
// offset, never a panic; anything but the original is refused.
func FuzzStateFile(f *testing.F) {
	orig := stateFixture(f)
	f.Add(orig)
	f.Add(orig[:20])
	f.Add([]byte("kspstate"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := &stateFile{entries: map[NodeID]stateEntry{}}
		off, err := s.parse(b)
		if err != nil && (off < 0 || off > int64(len(b))) {
			t.Fatalf("offset %d outside the %d-byte file", off, len(b))
		}
		if err == nil && !bytes.Equal(b, orig) && len(b) == len(orig) && bytes.Equal(b[:len(b)-4], orig[:len(orig)-4]) {
			t.Fatal("a changed checksum accepted")
		}
	})
}
