package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kspider/kspider/storage"
)

const fullDiskChildEnv = "KSPIDER_FULL_DISK_CHILD"

// TestFullDiskChild runs in a private mount namespace (TestFullDisk starts
// it under unshare): it mounts a 4 MiB tmpfs, crawls a demo web into it
// until the disk is full, and checks what an operator would: exit 1, a
// message saying the disk is full, and every page that made it to disk
// readable. It prints "ok N" (pages readable) or what went wrong.
func TestFullDiskChild(t *testing.T) {
	dir := os.Getenv(fullDiskChildEnv)
	if dir == "" {
		t.Skip("only run as TestFullDisk's child process")
	}
	fail := func(format string, a ...any) {
		fmt.Printf("FAIL "+format+"\n", a...)
		os.Exit(0)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		fail("mount: %v", err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), env{stdout: &out, stderr: &errb}, []string{"demo", "--plain", "--hosts", "40", "--dir", filepath.Join(dir, "d")})
	if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
		fail("exit %d, want 1 saying the disk is full:\n%s", code, errb.String())
	}
	r, err := storage.OpenReader([]string{filepath.Join(dir, "d", "pages")})
	if err != nil {
		fail("reading the pages back: %v", err)
	}
	n := 0
	if err := r.Scan(context.Background(), func(*storage.Page) error { n++; return nil }); err != nil {
		fail("scanning the pages: %v", err)
	}
	r.Close()
	fmt.Printf("ok %d\n", n)
	os.Exit(0)
}

// TestFullDisk: a data directory whose disk fills up stops the demo with
// exit 1 and a message naming the failure, never a panic, and the pages on
// disk stay readable. It needs a mount namespace of its own (unshare(1) as
// root) for a small tmpfs; without one it cannot run.
func TestFullDisk(t *testing.T) {
	if os.Getenv(fullDiskChildEnv) != "" {
		t.Skip("child")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare(1) to mount a small tmpfs in a private mount namespace")
	}
	dir := t.TempDir()
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestFullDiskChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), fullDiskChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok ") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}
