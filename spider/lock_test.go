package spider

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const lockChildEnv = "KSPIDER_LOCK_CHILD"

// TestLockDirChild is the process TestLockDir starts; in a normal run it
// returns at once. It locks the directory named by $KSPIDER_LOCK_CHILD,
// prints "locked PID PREVIOUS" (or "refused ERROR"), and holds the lock
// until its stdin closes.
func TestLockDirChild(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		return
	}
	l, err := LockDir(dir)
	if err != nil {
		fmt.Printf("refused %v\n", err)
		os.Exit(3)
	}
	fmt.Printf("locked %d %d\n", os.Getpid(), l.Previous)
	io.Copy(io.Discard, os.Stdin)
	if err := l.Release(); err != nil {
		fmt.Printf("release %v\n", err)
		os.Exit(4)
	}
	os.Exit(0)
}

// lockChild is a running TestLockDirChild.
type lockChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	line  string // its first line
}

func startLockChild(t *testing.T, dir string) *lockChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDirChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &lockChild{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child said nothing: %v", err)
	}
	c.line = strings.TrimSpace(line)
	return c
}

// locked returns the child's pid and Previous, failing unless it locked.
func (c *lockChild) locked(t *testing.T) (pid, previous int) {
	t.Helper()
	f := strings.Fields(c.line)
	if len(f) != 3 || f[0] != "locked" {
		t.Fatalf("child: %q, want it locked", c.line)
	}
	pid, _ = strconv.Atoi(f[1])
	previous, _ = strconv.Atoi(f[2])
	return pid, previous
}

func TestLockDir(t *testing.T) {
	if os.Getenv(lockChildEnv) != "" {
		return
	}
	dir := filepath.Join(t.TempDir(), "data")
	a := startLockChild(t, dir)
	pidA, prev := a.locked(t)
	if pidA != a.cmd.Process.Pid || prev != 0 {
		t.Fatalf("child A: pid %d previous %d (its pid is %d)", pidA, prev, a.cmd.Process.Pid)
	}

	// Held by A: this process is refused with A's pid.
	_, err := LockDir(dir)
	var le *DirLockedError
	if !errors.As(err, &le) || le.PID != pidA || !errors.Is(err, ErrDirLocked) {
		t.Fatalf("LockDir while A holds it: %v", err)
	}
	if want := fmt.Sprintf("in use by another kspider process, pid %d", pidA); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}

	// A killed with SIGKILL leaves its LOCK file naming it; the kernel has
	// dropped the flock, so the next process takes over and learns the
	// dead process's pid.
	a.cmd.Process.Kill()
	a.cmd.Wait()
	if b, _ := os.ReadFile(filepath.Join(dir, "LOCK")); strings.TrimSpace(string(b)) != strconv.Itoa(pidA) {
		t.Fatalf("LOCK after the kill holds %q", b)
	}
	l, err := LockDir(dir)
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	if l.Previous != pidA {
		t.Errorf("Previous = %d, want the dead child's %d", l.Previous, pidA)
	}

	// Held by this process: another process is refused with our pid.
	c := startLockChild(t, dir)
	if want := fmt.Sprintf("refused data directory %s is in use by another kspider process, pid %d", dir, os.Getpid()); c.line != want+" ("+filepath.Join(dir, "LOCK")+")" {
		t.Errorf("child C: %q, want %q", c.line, want)
	}
	// And so is a second lock in this process (flock locks are per open
	// file, not per process).
	if _, err := LockDir(dir); !errors.Is(err, ErrDirLocked) {
		t.Errorf("second LockDir in one process: %v", err)
	}

	// A clean release leaves no pid behind.
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	d := startLockChild(t, dir)
	if _, prev := d.locked(t); prev != 0 {
		t.Errorf("after a release, Previous = %d", prev)
	}
	d.stdin.Close()
	if err := d.cmd.Wait(); err != nil {
		t.Errorf("child D: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "LOCK")); len(b) != 0 {
		t.Errorf("LOCK after D's release holds %q", b)
	}
}

func TestLockDirErrors(t *testing.T) {
	file := writeFile(t, t.TempDir(), "file", "")
	if _, err := LockDir(file); err == nil || errors.Is(err, ErrDirLocked) {
		t.Errorf("LockDir on a file: %v", err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "LOCK", "garbage\x00\n")
	l, err := LockDir(dir)
	if err != nil || l.Previous != 0 {
		t.Fatalf("LOCK with garbage: %v, previous %d", err, l.Previous)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
}
