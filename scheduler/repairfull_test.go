package scheduler

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRepairDiskFull: a repair copies the file it changes into damaged/
// first; on a disk without room for the copy it failed, as it must, but
// left the part it had copied there under the file's name, where it
// passed for the damaged file kept (a third of it, here), and held what
// space the disk had left. Now the partial copy and its empty folder are
// removed, and the scheduler's files are as they were.
func TestRepairDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=3m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer unix.Unmount(disk, unix.MNT_DETACH)
	dir := filepath.Join(disk, "sched")
	s := mustOpen(t, dir, basicConfig(newFakeClock(1, time.Hour, 0)))
	for id := range uint32(200_000) { // 1.6 MB of records
		if _, err := s.Add(id, "a.example", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, statesName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+8*1000+3] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var st0, st1 unix.Statfs_t
	unix.Statfs(disk, &st0)
	rep, err := Check(dir, true)
	if err == nil || rep.Repaired {
		t.Fatalf("repair on a full disk: %v, %+v; want an error", err, rep)
	}
	t.Logf("repair on a full disk: %v", err)
	if kept, _ := filepath.Glob(filepath.Join(dir, "damaged", "*", "*")); len(kept) > 0 {
		t.Errorf("the failed repair left %v", kept)
	}
	if dirs, _ := filepath.Glob(filepath.Join(dir, "damaged", "*")); len(dirs) > 0 {
		t.Errorf("the failed repair left the folder %v", dirs)
	}
	if unix.Statfs(disk, &st1); st1.Bfree < st0.Bfree {
		t.Errorf("the failed repair left %d KiB of the disk taken", (st0.Bfree-st1.Bfree)*uint64(st0.Bsize)>>10)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
		t.Errorf("%s changed by the failed repair", statesName)
	}
	if _, err := os.Stat(filepath.Join(dir, metaName+".repair")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s.repair left: %v", metaName, err)
	}
}
