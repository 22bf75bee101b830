package urltree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadID(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadID(dir); !errors.Is(err, ErrNoTree) {
		t.Fatalf("no tree: %v, want ErrNoTree", err)
	}
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.AddString("http://host.example/"); err != nil {
		t.Fatal(err)
	}
	want := tr.ID()
	// Not closed: as a running or crashed node leaves it.
	if id, err := ReadID(dir); err != nil || id != want || id.IsZero() {
		t.Fatalf("ReadID = %v, %v; want %v", id, err, want)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, metaName)
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"damaged", append(append([]byte{}, b[:20]...), append([]byte{b[20] ^ 1}, b[21:]...)...), ErrCorrupt},
		{"cut in its header", b[:30], ErrCorrupt},
		{"empty", nil, ErrCorrupt},
	} {
		if err := os.WriteFile(meta, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		if id, err := ReadID(dir); !errors.Is(err, c.want) {
			t.Errorf("%s: ReadID = %v, %v; want %v", c.name, id, err, c.want)
		}
	}
}
