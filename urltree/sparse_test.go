package urltree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExtendedFileDiskFull: an array file extended with zeros (sparse)
// has holes where growth would have reserved disk blocks with fallocate,
// so on a full disk the writer's store into one killed the process with
// SIGBUS; now a writer's Open cuts such a file back to where its data
// ends and reserves the rest, and Add fails with the disk's error.
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
	dir := filepath.Join(disk, "urls")
	tr, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		tr.AddString(fmt.Sprintf("http://h%d.example/", i))
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, arenaName), 1<<30); err != nil {
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

const sparseFullEnv = "KSPIDER_URLTREE_SPARSEFULL_DIR"

func sparseFullChild(dir string) {
	tr, err := Open(dir, nil)
	if err != nil {
		fmt.Printf("Open: %v\n", err)
		return
	}
	for i := range 1_000_000 {
		if _, _, err := tr.AddString(fmt.Sprintf("http://host%d.example/a/long/path/%d", i*7919%100003, i)); err != nil {
			fmt.Printf("child ok: %d URLs, then %v\n", tr.Len(), err)
			return
		}
	}
	fmt.Println("Add never failed on a full disk")
}
