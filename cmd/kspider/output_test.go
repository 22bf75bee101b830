package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/tools/stats/storetest"
)

// TestOutputPathIsCheckedFirst gives export warc and stats --html outputs
// that cannot be written as a file renamed into place. Each is refused
// with its reason before the store is read: a damaged store's report never
// shows. Before, a directory failed only at the final rename ("file
// exists", after the whole scan), "-" made a file named "-", a named pipe
// or a device (/dev/null, run as root) was replaced by a plain file. No
// device here: this test, run on the old code as root, would replace it.
func TestOutputPathIsCheckedFirst(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	out := t.TempDir()
	fifo := filepath.Join(out, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(out, "dangling")
	if err := os.Symlink(filepath.Join(out, "none", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{out, 1, "is a directory"},
		{"-", 2, "standard output"},
		{fifo, 1, "a named pipe"},
		{dangling, 1, "a symbolic link to a file that does not exist"},
		{filepath.Join(out, "none", "x"), 1, "cannot write " + filepath.Join(out, "none", "x")},
	} {
		for _, cmd := range [][]string{{"export", "warc", "--out", c.path}, {"stats", "--html", c.path}} {
			code, _, errOut := runCmd(t, "", append(cmd, args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "damage") {
				t.Errorf("%v: exit %d, stderr %q; want exit %d, %q and no store read", cmd, code, errOut, c.code, c.want)
			}
		}
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 2 {
		t.Errorf("refused outputs left files: %v", ents)
	}
}

// An output file write-protected (chmod a-w: an archive kept from being
// overwritten) was replaced all the same: the rename into place needs
// only the directory's permission, so export and stats --html did what
// '>' and cp refuse, and left the new file mode 644. Now such a file is
// refused, before the store is read, and left as it was.
func TestWriteProtectedOutputIsRefused(t *testing.T) {
	_, args := buildTestStore(t, 1, "lzo")
	out := filepath.Join(t.TempDir(), "kept.warc.gz")
	if err := os.WriteFile(out, []byte("the archive"), 0o444); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"export", "warc", "--out", out}, {"stats", "--html", out}} {
		code, _, errOut := runCmd(t, "", append(cmd, args...)...)
		if want := "cannot write " + out + ": it is write-protected (mode -r--r--r--)"; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", cmd, code, errOut, want)
		}
		if b, _ := os.ReadFile(out); string(b) != "the archive" {
			t.Fatalf("%v replaced the write-protected %s", cmd, out)
		}
	}
}

// An output named through a symbolic link replaces the file the link
// names; the link stays.
func TestOutputThroughSymlink(t *testing.T) {
	_, args := buildTestStore(t, 1, "lzo")
	out := t.TempDir()
	target, link := filepath.Join(out, "real.warc.gz"), filepath.Join(out, "link.warc.gz")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.warc.gz", link); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, "", append([]string{"export", "warc", "--out", link}, args...)...); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Size() < 100 {
		t.Fatalf("the link's file was not written: %v", err)
	}
}
