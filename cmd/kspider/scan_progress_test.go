package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what a command writes to tty, the test
// reads from the returned function once tty is closed.
func openPTY(t *testing.T) (tty *os.File, output func() string) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pseudo-terminal number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&got, ptmx) // ends with EIO once tty is closed
	}()
	return tty, func() string {
		tty.Close()
		<-done
		return got.String()
	}
}

// kspider stats drew its progress line on a terminal, but export, the
// longer of the two (every page compressed), and get's scan for a URL said
// nothing until they ended: an operator could not tell an export of a
// terabyte from a hung one.
func TestScansDrawProgressOnATerminal(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	for _, cmd := range [][]string{
		append([]string{"export", "warc", "--out", filepath.Join(t.TempDir(), "x.warc.gz")}, args...),
		append([]string{"stats"}, args...),
		append(append([]string{"get"}, args...), "http://www.ku.ac.th/nosuchpage"), // the whole store scanned for it
	} {
		tty, output := openPTY(t)
		var stdout bytes.Buffer
		code := run(context.Background(), env{stdout: &stdout, stderr: tty}, cmd)
		got := output()
		wantCode := 0
		if cmd[0] == "get" {
			wantCode = 1 // no such page
		}
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d: %s", cmd[0], code, wantCode, got)
		}
		if !strings.Contains(got, "scanned 12 pages") || !strings.Contains(got, "100%") {
			t.Errorf("%s: no progress line on the terminal: %q", cmd[0], got)
		}
	}
}
