package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSyncFailureSticks: an fdatasync of a scheduler file that failed (an
// I/O error: the kernel may drop the pages it could not write, and says so
// once) was followed by a Sync whose fdatasync succeeded, over the loss,
// and wrote a commit covering records the disk may not hold; Close then
// recorded a clean close. Now a failed sync fails every later Sync and
// the Close: the last commit stays the one before the failure.
func TestSyncFailureSticks(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, dir, basicConfig(clk))
	add := func(from, to uint32) {
		for id := from; id < to; id++ {
			if _, err := s.Add(id, fmt.Sprintf("host%d.example", id%7), 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 100)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	add(100, 200)
	eio := syscall.EIO
	s.statesF.datasync = func(int) error { return eio }
	if err := s.Sync(); !errors.Is(err, eio) {
		t.Fatalf("Sync with the states file's fdatasync failing: %v, want EIO", err)
	}
	s.statesF.datasync = nil // the next one succeeds, as the kernel's does
	if err := s.Sync(); !errors.Is(err, eio) || !strings.Contains(err.Error(), "may be lost") {
		t.Errorf("Sync after a failed one: %v, want the first failure again", err)
	}
	if err := s.Close(); !errors.Is(err, eio) {
		t.Errorf("Close after a failed sync: %v, want the failure", err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if c := s.meta.last; c.urls != 100 || c.flags&flagClean != 0 {
		t.Errorf("the last commit after the failure: %d URLs, clean %v; want the one before it, 100, not clean", c.urls, c.flags&flagClean != 0)
	}
}
