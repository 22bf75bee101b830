package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit checks deploy/kspider.service with systemd-analyze
// verify, with ExecStart pointed at this test binary (verify wants the
// program to exist).
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/kspider.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/kspider run --config ") {
		t.Fatal("ExecStart is not `kspider run --config ...`")
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit cannot be verified here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kspider.service")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/kspider", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", p).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Logf("systemd-analyze verify:\n%s", out)
	}
}
