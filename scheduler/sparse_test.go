package scheduler

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExtendedFileDiskFull: a scheduler file extended with zeros (sparse)
// has holes where growth would have reserved disk blocks with fallocate,
// so on a full disk a store into one (a URL's record) killed the node
// with SIGBUS; now Open cuts such a file back to where its data (or its
// commit) ends and reserves the rest, and Add fails with the disk's
// error.
func TestExtendedFileDiskFull(t *testing.T) {
	if dir := os.Getenv(sparseFullEnv); dir != "" {
		sparseFullChild(dir)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer unix.Unmount(disk, unix.MNT_DETACH)
	dir := filepath.Join(disk, "sched")
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	for id := range uint32(100) {
		s.Add(id, "a.example", 1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, statesName), 1<<30); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(disk, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestExtendedFileDiskFull$", "-test.count=1")
	cmd.Env = append(os.Environ(), sparseFullEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

const sparseFullEnv = "KSPIDER_SCHEDULER_SPARSEFULL_DIR"

func sparseFullChild(dir string) {
	s, err := Open(dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	if err != nil {
		fmt.Printf("Open: %v\n", err)
		return
	}
	for id := uint32(100); id < 1_000_000; id++ {
		if _, err := s.Add(id, "a.example", 1); err != nil {
			fmt.Printf("child ok: %d URLs, then %v\n", s.Len(), err)
			return
		}
	}
	fmt.Println("Add never failed on a full disk")
}
