package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setOldSchedHeaders makes the headers of node's sched/ those a kspider
// before scheduler format version 3 wrote: the old versions, no tree ID.
func setOldSchedHeaders(t *testing.T, node string) {
	t.Helper()
	for name, version := range map[string]uint32{"sched.meta": 1, "sched.states": 2, "sched.hosts": 1, "sched.names": 1} {
		path := filepath.Join(node, "sched", name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[8:], version)
		clear(b[12:64])
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckOldSchedOfAnotherDir: a sched/ from before format version 3
// (no tree ID) copied from another data directory is refused by the
// node's start (scheduler.ErrForeign, its records' hosts compared with
// the tree's), but kspider check said ok of it, exit 0. Now check holds
// it to the tree's hosts as the node does: damage naming both hosts, exit
// 1, not repaired and left as it was; the directory's own old sched/ is
// still ok, unchanged by the check.
func TestCheckOldSchedOfAnotherDir(t *testing.T) {
	nodeA, _ := buildTreeSchedOf(t, "a")
	nodeB, _ := buildTreeSchedOf(t, "b")
	setOldSchedHeaders(t, nodeA)
	setOldSchedHeaders(t, nodeB)
	meta := filepath.Join(nodeA, "sched", "sched.meta")
	own, _ := os.ReadFile(meta)
	code, out, errOut := runCmd(t, "", "check", "--data", nodeA)
	if code != 0 || !strings.Contains(out, "sched: "+filepath.Join(nodeA, "sched")+": ok: 5 URL records, 5 hosts\n") {
		t.Fatalf("own old scheduler: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if now, _ := os.ReadFile(meta); !bytes.Equal(now, own) {
		t.Fatalf("the check changed %s", meta)
	}
	for _, name := range []string{"sched.meta", "sched.states", "sched.hosts", "sched.names"} {
		b, err := os.ReadFile(filepath.Join(nodeB, "sched", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(nodeA, "sched", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copied, _ := os.ReadFile(meta)
	for _, args := range [][]string{{"check", "--data", nodeA}, {"check", "--repair", "--data", nodeA}} {
		code, out, errOut := runCmd(t, "", args...)
		if code != 1 || !strings.Contains(out, "damage: "+meta) || !strings.Contains(out, `URL 0 is of host "b0.example", but the URL tree's URL 0 is of host "a0.example"`) ||
			!strings.Contains(out, "of another URL tree") {
			t.Fatalf("%v: another directory's old scheduler: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if now, _ := os.ReadFile(meta); !bytes.Equal(now, copied) {
		t.Fatalf("the check changed %s", meta)
	}
	if moved, _ := filepath.Glob(filepath.Join(nodeA, "sched", "damaged", "*", "*")); len(moved) != 0 {
		t.Fatalf("repair moved another tree's scheduler files: %v", moved)
	}
	sched := filepath.Join(nodeA, "sched")
	code, out, errOut = runCmd(t, "", "check", "--data", sched)
	if code != 0 || !strings.Contains(out, "sched: "+sched+": ok: 5 URL records, 5 hosts; records no URL tree, and was not compared with one's URLs") {
		t.Fatalf("sched alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
