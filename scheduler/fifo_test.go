package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFIFOFile: a named pipe in the place of a scheduler file made Check
// (with or without repair) and an Open creating the scheduler (the meta
// file missing, looking at what a crash in create left) wait in the open
// for good, for a writer to the pipe that never came; now each fails at
// once, naming the file.
func TestFIFOFile(t *testing.T) {
	try := func(what, name string, f func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s with %s a FIFO: %v, want an error naming it", what, name, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s with %s a FIFO: still waiting after 10 s", what, name)
		}
	}
	cfg := basicConfig(newFakeClock(1, time.Hour, 0))
	for _, name := range []string{metaName, statesName, hostsName, namesName} {
		dir := idFixture(t, [16]byte{1})
		p := filepath.Join(dir, name)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		try("Open", name, func() error { _, err := Open(dir, cfg); return err })
		try("Check", name, func() error { _, err := Check(dir, false); return err })
		try("Check with repair", name, func() error { _, err := Check(dir, true); return err })
		if name != metaName {
			dir := t.TempDir()
			if err := unix.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
			try("Open creating", name, func() error { _, err := Open(dir, cfg); return err })
		}
	}
}
