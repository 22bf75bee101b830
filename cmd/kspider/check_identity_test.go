package main

import (
	"fmt"
	"hash/crc32"
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

// TestCheckIdentityNewer: an intact IDENTITY of a newer format version (a
// directory a newer kspider wrote) ended the check with an error, exit 1,
// so the directory's other files were never looked at and their damage
// not reported. Now it is a problem like the others, named as a newer
// kspider's, and the check goes on to the rest.
func TestCheckIdentityNewer(t *testing.T) {
	dir := t.TempDir()
	withCRC := func(body string) []byte {
		return []byte(body + fmt.Sprintf("crc32c %08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))))
	}
	path := filepath.Join(dir, "IDENTITY")
	if err := os.WriteFile(path, withCRC("kspider data directory 2\nnode 0 of 1, partition none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	depth := filepath.Join(dir, "DEPTH")
	if err := os.WriteFile(depth, []byte("kspider depth limit 1\nmax_depth 3\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--data", dir)
	if code != 1 || !strings.Contains(out, "identity: "+path+" was written by a newer kspider (format version 2") ||
		!strings.Contains(out, "depth: spider: "+depth+" is ") || !strings.Contains(errOut, "2 problems found") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
