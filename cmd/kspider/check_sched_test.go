package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/urltree"
)

// buildSchedSpill makes a node directory with a scheduler of 50 URLs in
// sched/, their URL tree in urls/ (the scheduler recording no ID, as from
// before format version 3) and, in comm/, a spill file of 5 items from
// node 1 to node 2 written by the format communicator/spill.go documents.
func buildSchedSpill(t *testing.T) string {
	t.Helper()
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id := range 50 {
		if _, _, err := tr.AddString(fmt.Sprintf("http://host%d.example/%d", id%5, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.Open(filepath.Join(node, "sched"), scheduler.Config{Clock: &benchClock{}, Phases: 1})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint32(50) {
		if _, err := s.Add(id, fmt.Sprintf("host%d.example", id%5), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	b := []byte("kspl")
	for _, v := range []uint16{1, 1, 2, 0} { // version, self, peer, reserved
		b = binary.BigEndian.AppendUint16(b, v)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	for k := range 5 {
		p := binary.AppendUvarint([]byte{1}, uint64(k))
		p = fmt.Appendf(p, "http://host%d.example/page", k)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(p, castagnoli))
		b = append(b, p...)
	}
	os.MkdirAll(filepath.Join(node, "comm"), 0o755)
	if err := os.WriteFile(filepath.Join(node, "comm", "spill-1-2"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return node
}

func TestCheckSchedAndSpill(t *testing.T) {
	for _, c := range []struct {
		file string
		off  int64
	}{
		{"", 0},
		{"sched/sched.meta", 4},
		{"sched/sched.states", 64 + 8*20 + 1},
		{"sched/sched.hosts", 64 + 64*2 + 5},
		{"sched/sched.names", 64 + 3},
		{"comm/spill-1-2", 16 + 8 + 4},
	} {
		node := buildSchedSpill(t)
		if c.file != "" {
			path := filepath.Join(node, c.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[c.off] ^= 0x20
			os.WriteFile(path, b, 0o644)
		}
		code, out, errOut := runCmd(t, "", "check", "--data", node)
		if c.file == "" {
			if code != 0 || !strings.Contains(out, "sched: "+filepath.Join(node, "sched")+": ok: 50 URL records, 5 hosts") ||
				!strings.Contains(out, "spill: "+filepath.Join(node, "comm")+": ok: 1 spill files, 5 items to deliver") {
				t.Errorf("clean: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			continue
		}
		if code != 1 || !strings.Contains(out, ": damage: "+filepath.Join(node, c.file)+": offset ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.file, code, out, errOut)
		}
	}
}

// TestCheckSchedRepair: --repair moves a damaged scheduler into damaged/
// and leaves damaged spill files in place, exiting 1 either way.
func TestCheckSchedRepair(t *testing.T) {
	node := buildSchedSpill(t)
	for _, f := range []string{"sched/sched.states", "comm/spill-1-2"} {
		path := filepath.Join(node, f)
		b, _ := os.ReadFile(path)
		b[64+8*3+2] ^= 1
		os.WriteFile(path, b, 0o644)
	}
	code, out, errOut := runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(out, "sched: "+filepath.Join(node, "sched")+": repaired") ||
		!strings.Contains(out, "spill: "+filepath.Join(node, "comm")+": cannot repair, files left in place") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	moved, _ := filepath.Glob(filepath.Join(node, "sched", "damaged", "*", "sched.states"))
	if len(moved) != 1 {
		t.Fatalf("sched.states not in damaged/: %v", moved)
	}
	if _, err := os.Stat(filepath.Join(node, "comm", "spill-1-2")); err != nil {
		t.Fatalf("spill file not left in place: %v", err)
	}
}

// TestCheckForeignSpill: a spill file that the directory's node (by its
// IDENTITY) did not write, or one for a node its cluster does not have, is
// a problem: the node opens only its own spill files by name, so their
// items would never be delivered. Without IDENTITY nothing is said.
func TestCheckForeignSpill(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	identity := func(node, nodes int) []byte {
		body := fmt.Appendf(nil, "kspider data directory 1\nnode %d of %d, partition url\n", node, nodes)
		return fmt.Appendf(body, "crc32c %08x\n", crc32.Checksum(body, castagnoli))
	}
	for _, c := range []struct {
		name           string
		ident          []byte
		code           int
		want, unwanted string
	}{
		{"no identity", nil, 0, "ok: 1 spill files", "not this node's"},
		{"its own", identity(1, 3), 0, "ok: 1 spill files", "not this node's"},
		{"another node's", identity(0, 3), 1, "node 1 wrote it, not node 0 (this directory is node 0 of 3, partition url); its 5 items are never delivered", ""},
		{"no such peer", identity(1, 2), 1, "node 1 has no peer 2 (this directory is node 1 of 2, partition url)", ""},
		{"a node alone", []byte("kspider data directory 1\nnode 0 of 1, partition none\n"), 1, "node 1 wrote it, not node 0 (this directory is a node alone)", ""},
	} {
		node := buildSchedSpill(t) // spill-1-2: node 1's 5 items for node 2
		if c.ident != nil {
			b := c.ident
			if !strings.Contains(string(b), "crc32c") {
				b = fmt.Appendf(b, "crc32c %08x\n", crc32.Checksum(b, castagnoli))
			}
			if err := os.WriteFile(filepath.Join(node, "IDENTITY"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := runCmd(t, "", "check", "--data", node)
		if code != c.code || !strings.Contains(out, c.want) || (c.unwanted != "" && strings.Contains(out, c.unwanted)) {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr: %s", c.name, code, out, errOut)
		}
	}
}

// buildTreeSched makes a node directory with a URL tree of 5 URLs in urls/
// and their scheduler, recording the tree's ID, in sched/.
func buildTreeSched(t *testing.T) (string, urltree.ID) {
	t.Helper()
	return buildTreeSchedOf(t, "host")
}

// buildTreeSchedOf is buildTreeSched with URL i of host <prefix>i.example.
func buildTreeSchedOf(t *testing.T, prefix string) (string, urltree.ID) {
	t.Helper()
	node := t.TempDir()
	tr, err := urltree.Open(filepath.Join(node, "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, _, err := tr.AddString(fmt.Sprintf("http://%s%d.example/", prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
	id := tr.ID()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.Open(filepath.Join(node, "sched"), scheduler.Config{Clock: &benchClock{}, Phases: 1, TreeID: id})
	if err != nil {
		t.Fatal(err)
	}
	for id := range uint32(5) {
		if _, err := s.Add(id, fmt.Sprintf("%s%d.example", prefix, id), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return node, id
}

// TestCheckSchedOfAnotherTree: a sched/ copied from another data directory
// is refused by the node's Open (scheduler.ErrForeign); check said nothing
// of it and exited 0. Now it is damage naming both IDs and files, and
// --repair leaves the files in place.
func TestCheckSchedOfAnotherTree(t *testing.T) {
	nodeA, idA := buildTreeSched(t)
	nodeB, idB := buildTreeSched(t)
	if code, out, errOut := runCmd(t, "", "check", "--data", nodeA); code != 0 {
		t.Fatalf("own scheduler: exit %d, stdout %q, stderr %q", code, out, errOut)
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
	code, out, errOut := runCmd(t, "", "check", "--data", nodeA)
	if code != 1 || !strings.Contains(out, idA.String()) || !strings.Contains(out, idB.String()) ||
		!strings.Contains(out, filepath.Join(nodeA, "sched", "sched.meta")) || !strings.Contains(out, filepath.Join(nodeA, "urls", "urltree.meta")) {
		t.Fatalf("another tree's scheduler: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--repair", "--data", nodeA)
	if code != 1 || !strings.Contains(out, "not repaired") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if moved, _ := filepath.Glob(filepath.Join(nodeA, "sched", "damaged", "*", "*")); len(moved) != 0 {
		t.Fatalf("repair moved another tree's scheduler files: %v", moved)
	}
}

// TestCheckSchedAlone: kspider check --data DIR/sched has no URL tree to
// hold the scheduler's ID to, and said "ok" as if it had compared them (a
// sched/ of another data directory, which the node refuses, passed). Now
// the ok line says it did not compare, and where to check the two
// together; with the tree checked it says plain ok.
func TestCheckSchedAlone(t *testing.T) {
	node, _ := buildTreeSched(t)
	sched := filepath.Join(node, "sched")
	code, out, errOut := runCmd(t, "", "check", "--data", sched)
	if code != 0 || !strings.Contains(out, "sched: "+sched+": ok: 5 URL records, 5 hosts; not compared with a URL tree") ||
		!strings.Contains(out, "kspider check --data "+node+" ") {
		t.Fatalf("sched alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--data", node)
	if code != 0 || !strings.Contains(out, "sched: "+sched+": ok: 5 URL records, 5 hosts\n") {
		t.Fatalf("node: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckSchedHeaderRepair: a repair that only wrote a damaged file
// header anew from the others' (a flipped bit in sched.hosts' ID) kept
// every record, but check said the files were moved away and the next
// start would create an empty scheduler, every URL's state lost. Now it
// says what the repair did, and the node's scheduler reads as before.
func TestCheckSchedHeaderRepair(t *testing.T) {
	node, _ := buildTreeSched(t)
	path := filepath.Join(node, "sched", "sched.hosts")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[20] ^= 4
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--repair", "--data", node)
	sched := filepath.Join(node, "sched")
	if code != 1 || !strings.Contains(out, "sched: "+sched+": repaired: 1 damaged file header written anew") || strings.Contains(out, "empty scheduler") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--data", node)
	if code != 0 || !strings.Contains(out, "sched: "+sched+": ok: 5 URL records, 5 hosts\n") {
		t.Fatalf("after repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckTreeForeignFile: a URL tree file copied in from another data
// directory is damage no repair touches (urltree.ErrForeign), but check's
// summary told the operator to run kspider check --repair, which then
// refused. Now the summary says to put back the tree's own file.
func TestCheckTreeForeignFile(t *testing.T) {
	nodeA, _ := buildTreeSched(t)
	nodeB, _ := buildTreeSched(t)
	b, err := os.ReadFile(filepath.Join(nodeB, "urls", "urltree.ptrs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nodeA, "urls", "urltree.ptrs"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "check", "--data", nodeA)
	urls := filepath.Join(nodeA, "urls")
	if code != 1 || strings.Contains(out, "run kspider check --repair") || !strings.Contains(out, "urls: "+urls+": 1 problems; "+filepath.Join(urls, "urltree.ptrs")+" of another URL tree") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckNewerFormat: files a newer kspider wrote (a higher format
// version, the header's checksum right) are read by neither checker, and
// their repairs refuse them, but each summary pointed at kspider check
// --repair. Now it says to use the kspider that wrote them.
func TestCheckNewerFormat(t *testing.T) {
	node, _ := buildTreeSched(t)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, f := range []string{"urls/urltree.meta", "sched/sched.meta"} {
		path := filepath.Join(node, f)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[8:], 99)
		binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd(t, "", "check", "--data", node)
	for _, part := range []string{"urls", "sched"} {
		want := part + ": " + filepath.Join(node, part) + ": files of a newer format version (named above)"
		if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "check --repair") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", part, code, out, errOut)
		}
	}
}

// TestCheckSchedLostCommit: with both of sched.meta's commit slots
// zeroed, --repair moved the whole scheduler away and said the next start
// would have an empty one; now it writes an empty commit, says so, and
// the next check finds all 5 URLs.
func TestCheckSchedLostCommit(t *testing.T) {
	node, _ := buildTreeSched(t)
	path := filepath.Join(node, "sched", "sched.meta")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[512:])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(node, "sched")
	code, out, errOut := runCmd(t, "", "check", "--repair", "--data", node)
	if code != 1 || !strings.Contains(out, "sched: "+sched+": repaired: no commit could be read") || strings.Contains(out, "empty scheduler") {
		t.Fatalf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "", "check", "--data", node)
	if code != 0 || !strings.Contains(out, "sched: "+sched+": ok: 5 URL records, 5 hosts\n") {
		t.Fatalf("after repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCheckHelpScheduler: check --help said a damaged scheduler cannot
// be rebuilt and is moved away, the node adding its URLs again, which
// sent an operator to give up on a directory whose repair keeps every
// record but the damaged ones (URL records, a header, the commit).
func TestCheckHelpScheduler(t *testing.T) {
	code, out, errOut := runCmd(t, "", "check", "--help")
	if code != 0 || strings.Contains(out, "cannot be rebuilt") || !strings.Contains(out, "damaged URL records become gaps") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
