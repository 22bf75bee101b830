package urltree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCreateCrash: a kill -9 inside create leaves at most the array files
// with nothing past their headers and a meta file begun under its
// temporary name, which the next Open clears; the meta file appears only
// whole, with its first commit. Before, it was made in place and its first
// commit written after, and a kill between left a meta file Open refused
// for good.
func TestCreateCrash(t *testing.T) {
	for _, arrays := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "urls")
		if arrays {
			tr, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			tr.Close()
			if err := os.Remove(filepath.Join(dir, metaName)); err != nil {
				t.Fatal(err)
			}
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, metaName+newSuffix), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := Open(dir, nil)
		if err != nil {
			t.Fatalf("arrays %v: Open after a crash in create: %v", arrays, err)
		}
		if _, _, err := tr.AddString("http://a.example/"); err != nil {
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, metaName+newSuffix)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("arrays %v: %s left: %v", arrays, metaName+newSuffix, err)
		}
	}
	// The meta file createMeta links into place holds its first commit.
	dir := t.TempDir()
	m, err := createMeta(filepath.Join(dir, metaName), commit{}, newID())
	if err != nil {
		t.Fatal(err)
	}
	m.close()
	m, err = openMeta(filepath.Join(dir, metaName), true)
	if err != nil {
		t.Fatalf("the new meta file: %v", err)
	}
	m.close()
}
