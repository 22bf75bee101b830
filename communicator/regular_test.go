package communicator

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after 5 s (a
// blocked open of a FIFO, which nothing ends).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked after 5 s", what)
		return nil
	}
}

// TestStateSpillNotRegular: the state file or a spill file made a FIFO
// (or a directory) by a hostile operator. Opening the FIFO blocked the
// endpoint's start, or kspider check, for good; now it is refused,
// naming the file.
func TestStateSpillNotRegular(t *testing.T) {
	for _, name := range []string{"state", "spill-1-2"} {
		for _, kind := range []string{"fifo", "dir"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, name)
				var err error
				if kind == "fifo" {
					err = syscall.Mkfifo(path, 0o644)
				} else {
					err = os.Mkdir(path, 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
				err = within(t, "CheckSpill", func() error { _, err := CheckSpill(dir); return err })
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Errorf("CheckSpill: %v; want an error naming %s", err, path)
				}
				if name != "state" {
					return // the endpoint moves a bad spill file aside (TestSpillBadKeptAside)
				}
				conns, addrs := loopbackConns(t, 2)
				err = within(t, "New", func() error {
					ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
						Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir})
					if err == nil {
						ep.Close()
					}
					return err
				})
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("New: %v; want an error naming %s, not a regular file", err, path)
				}
			})
		}
	}
}

// TestStateFileHuge: a state file far larger than any (a big file copied
// there by mistake) is refused, saying its size, before it is read into
// memory.
func TestStateFileHuge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 64<<20); err != nil { // sparse
		t.Fatal(err)
	}
	if _, err := openState(dir, 1); err == nil || !strings.Contains(err.Error(), "67108864 bytes, more than a state file has") {
		t.Errorf("openState: %v", err)
	}
	rep, err := CheckSpill(dir)
	if err != nil || !rep.Damaged() || !strings.Contains(rep.Findings[0].What, "more than a state file has") {
		t.Errorf("CheckSpill: %v %+v", err, rep)
	}
}

// TestStateTmpSymlink: a symbolic link planted as SpillDir/state.tmp had
// its target truncated and overwritten with the state by the next save
// that makes the file whole (the first start, say), and a dangling one
// planted as a spill file had its target created; now the temporary file
// is removed and made anew, and a spill file is created only where
// nothing is.
func TestStateTmpSymlink(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	target := filepath.Join(other, "precious")
	if err := os.WriteFile(target, []byte("not the communicator's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "state.tmp")); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(other, "created")
	if err := os.Symlink(dangling, filepath.Join(dir, "spill-1-2")); err != nil {
		t.Fatal(err)
	}
	conns, addrs := loopbackConns(t, 2)
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir})
	if err == nil {
		ep.Close()
	}
	if b, _ := os.ReadFile(target); string(b) != "not the communicator's" {
		t.Errorf("the target of state.tmp now holds %q", b)
	}
	if _, err := os.Lstat(dangling); err == nil {
		t.Error("the target of a dangling spill-1-2 link was created")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "state")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("state: %v %v", fi, err)
	}
}

// TestStateSpillSymlink: the state file or a spill file made a symbolic
// link to a file of the same kind elsewhere (another data directory's, a
// node's files shared through links) was followed: the endpoint saved
// its receive positions into the target in place, and appended items to
// a linked spill file, two writers of one file. Now both are refused,
// naming the link, at the start and by CheckSpill, and the target is
// left as it was.
func TestStateSpillSymlink(t *testing.T) {
	for _, name := range []string{"state", "spill-1-2"} {
		t.Run(name, func(t *testing.T) {
			other := t.TempDir()
			// The target: a valid file of node 1, written by an endpoint.
			conns, addrs := loopbackConns(t, 2)
			ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
				Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: other, QueueBytes: 1,
				DownAfter: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for k := range 20 {
				if err := ep.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
					t.Fatal(err)
				}
			}
			if err := ep.Close(); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(other, name)
			before, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			link := filepath.Join(dir, name)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			conns, addrs = loopbackConns(t, 2)
			ep, err = New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
				Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: dir, QueueBytes: 1})
			if err == nil {
				for k := range 20 {
					ep.Send(2, 0, []byte(testURL(1, 2, 100+k)))
				}
				ep.Close()
			}
			if err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("New: %v; want an error naming %s, a symbolic link", err, link)
			}
			if after, _ := os.ReadFile(target); string(after) != string(before) {
				t.Errorf("the target of %s was written through the link", link)
			}
			if _, err := CheckSpill(dir); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("CheckSpill: %v; want an error naming %s, a symbolic link", err, link)
			}
		})
	}
}
