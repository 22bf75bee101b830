package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// TestCheckDirFiles: kspider check reads DIR/DEPTH, DIR/SCOPE and
// DIR/STORES as a node's start does: ok with what they record; damaged at
// a random byte, named, exit 1 (the start refuses them, where check said
// nothing of them and exited 0); and a STORES naming a directory that
// holds no pages any more is a problem too, as the start refuses it.
func TestCheckDirFiles(t *testing.T) {
	dir := t.TempDir()
	tr, err := urltree.Open(filepath.Join(dir, "urls"), nil) // the pages' ids are its
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(dir, "pages")}, TreeID: tr.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), &storage.Page{URLID: 1, URL: "http://host.example/", Status: 200, Body: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	withCRC := func(body string) []byte {
		return []byte(body + fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))))
	}
	files := []struct {
		name, check string
		good        []byte
		ok          string
	}{
		{"DEPTH", "depth", withCRC("kspider depth limit 1\nmax_depth 3\n"), "ok: crawled to max_depth 3"},
		{"SCOPE", "scope", withCRC("kspider scope 1\nsha256 " + strings.Repeat("ab", 32) + "\n"), "ok: version 1"},
		{"STORES", "stores", withCRC("kspider page stores 1\n\"pages\"\n"), "ok: " + filepath.Join(dir, "pages")},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.good, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, _ := runCmd(t, "", "check", "--data", dir); code != 0 || !strings.Contains(out, f.check+": "+path+": "+f.ok) {
			t.Fatalf("check with a good %s: exit %d:\n%s", f.name, code, out)
		}
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		for range 10 {
			b := append([]byte(nil), f.good...)
			b[rand.IntN(len(b))] ^= byte(1 << rand.IntN(8))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, _ := runCmd(t, "", "check", "--data", dir)
			if code != 1 || !strings.Contains(out, f.check+": spider: "+path+" is ") || !strings.Contains(out, "cannot repair") {
				t.Fatalf("check of %s %q: exit %d:\n%s", f.name, b, code, out)
			}
		}
		if err := os.WriteFile(path, f.good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stores := filepath.Join(dir, "STORES")
	if err := os.WriteFile(stores, withCRC("kspider page stores 1\n\"pages\"\n\"disk2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, "", "check", "--data", dir)
	if code != 1 || !strings.Contains(out, "stores: "+stores+" names "+filepath.Join(dir, "disk2")+", which held pages of the crawl but holds none now") {
		t.Fatalf("check with a STORES naming an empty directory: exit %d:\n%s", code, out)
	}
}

// TestCheckToken: kspider check reads DIR/STATUS_TOKEN as the node's
// start does. A token others may read, one damaged or a directory in its
// place was said nothing of, exit 0, and the next start turned control
// off with a warning in its log only; now each is a problem naming the
// file, exit 1. A good token, and an empty one (made anew at the start),
// are ok.
func TestCheckToken(t *testing.T) {
	dir := t.TempDir()
	tr, err := urltree.Open(filepath.Join(dir, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "STATUS_TOKEN")
	good := strings.Repeat("0123456789abcdef", 4) + "\n"
	for _, c := range []struct {
		what  string
		body  string
		mode  os.FileMode
		dir   bool
		code  int
		wants string
	}{
		{"good", good, 0o600, false, 0, "token: " + path + ": ok"},
		{"empty", "", 0o600, false, 0, "token: " + path + ": ok: empty"},
		{"readable by others", good, 0o644, false, 1, path + ": mode -rw-r--r-- lets others read"},
		{"cut", good[:10] + "\n", 0o600, false, 1, path + ": not a token"},
		{"two words", good[:20] + " " + good[20:], 0o600, false, 1, path + ": not a token"},
		{"a directory", "", 0, true, 1, path + " is not a file"},
	} {
		os.RemoveAll(path)
		if c.dir {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := os.WriteFile(path, []byte(c.body), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runCmd(t, "", "check", "--data", dir)
		if code != c.code || !strings.Contains(out, c.wants) {
			t.Errorf("check with a STATUS_TOKEN %s: exit %d, want %d and %q:\n%s%s", c.what, code, c.code, c.wants, out, errOut)
		}
		if c.code == 1 && !strings.Contains(errOut, "1 problems found") {
			t.Errorf("check with a STATUS_TOKEN %s: the problem not counted:\n%s", c.what, errOut)
		}
	}
}

// TestCheckLock: kspider check opens DIR/LOCK as the node's start does. A
// LOCK that is a link, a FIFO, a directory or a hard link to another file
// was said nothing of, exit 0, and the next start refused the directory;
// now each is a problem naming the file, exit 1. A LOCK file, or none, is
// ok.
func TestCheckLock(t *testing.T) {
	dir := t.TempDir()
	tr, err := urltree.Open(filepath.Join(dir, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "LOCK")
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		make  func() error
		code  int
		wants string
	}{
		{"none", func() error { return nil }, 0, ""},
		{"a file", func() error { return os.WriteFile(path, []byte("123\n"), 0o644) }, 0, "lock: " + path + ": ok"},
		{"a link", func() error { return os.Symlink(other, path) }, 1, path + " is a symbolic link"},
		{"a link to itself", func() error { return os.Symlink("LOCK", path) }, 1, path + " is a symbolic link"},
		{"a FIFO", func() error { return syscall.Mkfifo(path, 0o644) }, 1, path + " is not a file of its own"},
		{"a hard link", func() error { return os.Link(other, path) }, 1, path + " is not a file of its own"},
		{"a directory", func() error { return os.Mkdir(path, 0o755) }, 1, path},
	} {
		os.RemoveAll(path)
		if err := c.make(); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd(t, "", "check", "--data", dir)
		if code != c.code || !strings.Contains(out, c.wants) {
			t.Errorf("check with a LOCK %s: exit %d, want %d and %q:\n%s%s", c.what, code, c.code, c.wants, out, errOut)
		}
		if c.code == 1 && !strings.Contains(out, "lock: "+path+": cannot repair here") {
			t.Errorf("check with a LOCK %s: not counted as the lock's problem:\n%s", c.what, out)
		}
		if strings.Contains(out, "lock: lock:") {
			t.Errorf("check with a LOCK %s: the part named twice:\n%s", c.what, out)
		}
	}
	// --repair, which takes the lock, told the operator to stop a node
	// that does not run.
	os.RemoveAll(path)
	if err := os.Symlink(other, path); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "", "check", "--repair", "--data", dir); code != 1 || !strings.Contains(out, path+" is a symbolic link") || strings.Contains(out+errOut, "stop the node") {
		t.Errorf("check --repair with a LOCK a link: exit %d, want 1 naming the link, no node to stop:\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "keep\n" {
		t.Errorf("the file a LOCK linked to: %q, %v; check must not write it", b, err)
	}
}

// TestCheckRepairRefusedLockChecksTheRest: with --repair, a DIR/LOCK the
// start refuses too (a link) left the whole directory unchecked ('not
// checked (said above): DIR'), its other parts' damage unreported. Now
// the rest is checked, none of it repaired (no lock is held), and the
// LOCK is a problem of its own, exit 1.
func TestCheckRepairRefusedLockChecksTheRest(t *testing.T) {
	dir := t.TempDir()
	tr, err := urltree.Open(filepath.Join(dir, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	depth := filepath.Join(dir, "DEPTH")
	if err := os.WriteFile(depth, []byte("kspider depth limit 1\nmax_depth 3\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "LOCK")
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), lock); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--repair", "--data", dir)
	for _, want := range []string{
		"urls: " + filepath.Join(dir, "urls") + ": ok",
		"depth: spider: " + depth + " is ",
		"lock: " + lock + ": cannot repair here",
		"the parts are checked, not repaired",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check --repair with a LOCK a link: stdout lacks %q", want)
		}
	}
	if code != 1 || strings.Contains(errOut, "not checked") || !strings.Contains(errOut, "2 problems found in "+dir+", 0 repaired") ||
		!strings.Contains(errOut, dir+" lock: 1 (check cannot repair it)") {
		t.Errorf("check --repair with a LOCK a link: exit %d, want 1, the directory checked, its 2 problems unrepaired:\n%s%s", code, out, errOut)
	}
}
