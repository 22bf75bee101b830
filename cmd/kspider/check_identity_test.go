package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check reads a node's IDENTITY, and a damaged one is a problem it cannot
// repair (nothing else says whose share the directory holds).
func TestCheckIdentity(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 2, 2, 1, "100ms")
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d:\n%s", code, errOut)
	}
	path := filepath.Join(dir, "IDENTITY")
	if code, out, _ := runCmd(t, "", "check", "--data", dir); code != 0 || !strings.Contains(out, "identity: "+path+": ok: a node alone") {
		t.Fatalf("check: exit %d:\n%s", code, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len("kspider data directory 1\nnode ")] = '7'
	os.WriteFile(path, b, 0o644)
	for _, args := range [][]string{{"check", "--data", dir}, {"check", "--data", dir, "--repair"}} {
		code, out, _ := runCmd(t, "", args...)
		if code != 1 || !strings.Contains(out, "identity: "+path+" is damaged:") || !strings.Contains(out, "cannot repair") {
			t.Errorf("%v on a damaged IDENTITY: exit %d:\n%s", args, code, out)
		}
	}
	if code, _, errOut := runCmd(t, "", "run", "--config", conf, "--ca", ca, "--quiet"); code != 1 || !strings.Contains(errOut, "is damaged") {
		t.Errorf("run on a damaged IDENTITY: exit %d:\n%s", code, errOut)
	}
}
