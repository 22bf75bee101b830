package urltree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// makeTree writes a closed tree of n URLs (prefix p) in a new directory.
func makeTree(t *testing.T, p string, n int) string {
	t.Helper()
	dir := t.TempDir()
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := tr.AddString(fmt.Sprintf("http://%s.example/%d", p, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestForeignFile: a file of another tree in a tree's directory (copied
// from another data directory, of the same size and shape) was read as the
// tree's own, its URLs mixed with the other's; Open now refuses it with
// ErrForeign naming the file, Check reports it, and a repair refuses to
// mix the two and changes nothing.
func TestForeignFile(t *testing.T) {
	for _, name := range []string{nodesName, ptrsName, arenaName, metaName} {
		a, b := makeTree(t, "a", 100), makeTree(t, "b", 100)
		copyFile(t, filepath.Join(b, name), filepath.Join(a, name))
		_, err := Open(a, nil)
		if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s of another tree: Open = %v, want ErrForeign naming it", name, err)
		}
		if _, err := Open(a, &Options{ReadOnly: true}); !errors.Is(err, ErrForeign) {
			t.Errorf("%s of another tree: read-only Open = %v, want ErrForeign", name, err)
		}
		before, _ := os.ReadFile(filepath.Join(a, arenaName))
		rep, err := Check(a, true)
		if !errors.Is(err, ErrForeign) || rep == nil || !rep.Damaged() || rep.Repaired {
			t.Errorf("%s of another tree: Check with repair = %v, %+v; want ErrForeign, damage, no repair", name, err, rep)
		}
		if after, _ := os.ReadFile(filepath.Join(a, arenaName)); string(after) != string(before) {
			t.Errorf("%s of another tree: the refused repair changed the arena", name)
		}
	}
}

// setV2 rewrites the header of the file at path as format version 2: no
// ID, its checksum recomputed.
func setV2(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(b[8:], 2)
	clear(b[12:60])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileID(t *testing.T, path string) ID {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return headerID(b)
}

// TestUpgradeV2: a tree of format version 2 is read; a writer gives it an
// ID in every file, which it keeps. An upgrade a crash cut short (array
// files with an ID, the meta file without) is taken and done again.
func TestUpgradeV2(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		dir := makeTree(t, "a", 100)
		all := []string{metaName, nodesName, ptrsName, arenaName}
		if crashed {
			setV2(t, filepath.Join(dir, metaName))
		} else {
			for _, n := range all {
				setV2(t, filepath.Join(dir, n))
			}
		}
		ro, err := Open(dir, &Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("crashed %v: read-only Open of a version 2 tree: %v", crashed, err)
		}
		if !ro.ID().IsZero() || ro.Len() != 100 {
			t.Errorf("crashed %v: read-only: ID %v, %d URLs", crashed, ro.ID(), ro.Len())
		}
		ro.Close()
		if rep, err := Check(dir, false); err != nil || rep.Damaged() {
			t.Errorf("crashed %v: Check of a version 2 tree: %v, %v", crashed, err, rep.Findings)
		}
		tr, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("crashed %v: Open of a version 2 tree: %v", crashed, err)
		}
		id := tr.ID()
		if id.IsZero() || tr.Len() != 100 {
			t.Errorf("crashed %v: upgraded: ID %v, %d URLs", crashed, id, tr.Len())
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		for _, n := range all {
			if got := fileID(t, filepath.Join(dir, n)); got != id {
				t.Errorf("crashed %v: %s has ID %v, the tree %v", crashed, n, got, id)
			}
		}
		tr, err = Open(dir, nil)
		if err != nil || tr.ID() != id {
			t.Fatalf("crashed %v: reopened: %v, ID %v want %v", crashed, err, tr.ID(), id)
		}
		tr.Close()
	}
}

// TestRepairKeepsID: a repair rebuilds the files with the tree's ID, so
// what was paired with the tree (the scheduler) still is.
func TestRepairKeepsID(t *testing.T) {
	dir := makeTree(t, "a", 100)
	id := fileID(t, filepath.Join(dir, metaName))
	p := filepath.Join(dir, arenaName)
	b, _ := os.ReadFile(p)
	b[headerSize+10] ^= 0x40
	os.WriteFile(p, b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired {
		t.Fatalf("Check: %v, %+v", err, rep)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.ID() != id {
		t.Errorf("repaired tree's ID %v, was %v", tr.ID(), id)
	}
}
