package urltree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckMessages pins what Check and Open say for typical damage, and
// that a tree survives the loss of its whole meta file or pointer file.
func TestCheckMessages(t *testing.T) {
	fx := newCorruptFixture(t, 100, true)
	setup := func(edit func(dir string)) string {
		dir := t.TempDir()
		for nm, b := range fx.files {
			if err := os.WriteFile(filepath.Join(dir, nm), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		edit(dir)
		return dir
	}
	flip := func(name string, off int) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, name)
			b, _ := os.ReadFile(p)
			b[off] ^= 0x10
			os.WriteFile(p, b, 0o644)
		}
	}
	for _, c := range []struct {
		name    string
		edit    func(string)
		openMsg string // "" if Open must succeed
		lost    uint64
		urls    uint64 // after a repair
	}{
		{"ptr", flip(ptrsName, headerSize+3*ptrRecord), "urltree.ptrs: offset 88: block pointer 3 says arena offset", 0, 100},
		{"arena", flip(arenaName, fx.used[arenaName]-40), "urltree.arena: offset", 0, 100},
		{"version", flip(arenaName, 11), "urltree.arena: offset 0: corrupt header", 0, 100},
		{"nodes", flip(nodesName, 100), "", 0, 100},
		{"no meta", func(dir string) { os.Remove(filepath.Join(dir, metaName)) }, "", 0, 96},
		{"no ptrs", func(dir string) { os.Remove(filepath.Join(dir, ptrsName)) }, "urltree.ptrs", 0, 100},
	} {
		dir := setup(c.edit)
		tr, err := Open(dir, nil)
		switch {
		case c.name == "no meta":
			// Open must not start a new tree over the old one's files.
			if err == nil || !strings.Contains(err.Error(), "urltree.meta: offset 0: missing, but urltree.nodes holds data") {
				t.Errorf("%s: Open = %v", c.name, err)
			}
		case c.openMsg == "" && err != nil:
			t.Errorf("%s: Open: %v", c.name, err)
		case c.openMsg == "":
			if !tr.Recovered() || !strings.Contains(tr.RecoveredWhy(), "checksum mismatch") {
				t.Errorf("%s: recovered %v (%s), want a rebuild for the checksum", c.name, tr.Recovered(), tr.RecoveredWhy())
			}
			tr.Close()
		case err == nil || !strings.Contains(err.Error(), c.openMsg):
			t.Errorf("%s: Open = %v, want %q", c.name, err, c.openMsg)
		}
		rep, err := Check(dir, true)
		if err != nil {
			t.Fatalf("%s: Check: %v", c.name, err)
		}
		t.Logf("%s: %v", c.name, rep.Findings)
		if c.openMsg != "" && (!rep.Repaired || rep.Lost < c.lost) {
			t.Errorf("%s: repaired %v, lost %d", c.name, rep.Repaired, rep.Lost)
		}
		tr, err = Open(dir, nil)
		if err != nil {
			t.Fatalf("%s: Open after repair: %v", c.name, err)
		}
		if uint64(tr.Len()) != c.urls {
			t.Errorf("%s: %d URLs after repair, want %d", c.name, tr.Len(), c.urls)
		}
		tr.Close()
	}
	if _, err := Check(t.TempDir(), false); !errors.Is(err, ErrNoTree) {
		t.Errorf("Check of an empty directory: %v, want ErrNoTree", err)
	}
}
