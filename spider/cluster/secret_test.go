package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "0123456789abcdef0123\n", 0o600)
	if b, err := ReadSecret(good); err != nil || string(b) != "0123456789abcdef0123" {
		t.Fatalf("good secret: %q, %v", b, err)
	}
	if _, err := ReadSecret(write("ro", "0123456789abcdef", 0o400)); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
	for _, c := range []struct {
		name, body string
		mode       os.FileMode
		want       string
	}{
		{"open", "0123456789abcdef0123", 0o644, "mode 0644"},
		{"group", "0123456789abcdef0123", 0o640, "mode 0640"},
		{"short", "short\n", 0o600, "5 bytes"},
		{"blank", " \n\n", 0o600, "0 bytes"},
		{"big", strings.Repeat("x", maxSecret+1), 0o600, "over"},
	} {
		_, err := ReadSecret(write(c.name, c.body, c.mode))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
	if _, err := ReadSecret(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
	if _, err := ReadSecret(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

// TestReadSecretFIFO: a named pipe given as the secret file is refused at
// once; its open(2) waited for a writer, and kspider run hung there past
// Ctrl-C and SIGTERM.
func TestReadSecretFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadSecret(p)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), p+" is not a regular file") {
			t.Errorf("named pipe: %v, want an error naming it", err)
		}
	case <-time.After(10 * time.Second):
		// Give the open its writer, so that the goroutine ends.
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("ReadSecret of a named pipe no one writes to did not return in 10 s")
	}
}
