package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// idFixture builds a closed scheduler of the URL tree id: ids 0..29 of
// three hosts, the same for every id, so that two fixtures' files differ
// only by their ID.
func idFixture(t *testing.T, id [16]byte) string {
	t.Helper()
	dir := t.TempDir()
	cfg := basicConfig(newFakeClock(1, time.Hour, 0))
	cfg.TreeID = id
	s := mustOpen(t, dir, cfg)
	for i := range uint32(30) {
		if _, err := s.Add(i, []string{"a.example", "b.example", "c.example"}[i%3], 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func idConfig(id [16]byte) Config {
	cfg := basicConfig(newFakeClock(1, time.Hour, 0))
	cfg.TreeID = id
	return cfg
}

// TestForeignSchedulerFile: a file of another node's or crawl's scheduler
// copied in (the same hosts, the same number of URLs) was read as this
// one's, its states taken for this tree's URLs; now Open refuses it with
// ErrForeign naming the file, Check reports it, and a repair leaves the
// files where they are.
func TestForeignSchedulerFile(t *testing.T) {
	x, y := [16]byte{1, 2, 3}, [16]byte{4, 5, 6}
	for _, name := range []string{statesName, hostsName, namesName, metaName} {
		a, b := idFixture(t, x), idFixture(t, y)
		src, _ := os.ReadFile(filepath.Join(b, name))
		if err := os.WriteFile(filepath.Join(a, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cfg := range []Config{idConfig(x), idConfig([16]byte{})} {
			_, err := Open(a, cfg)
			if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s of another scheduler, TreeID %x: Open = %v, want ErrForeign naming it", name, cfg.TreeID, err)
			}
		}
		rep, err := Check(a, true)
		if !errors.Is(err, ErrForeign) || rep == nil || !rep.Damaged() || rep.Repaired {
			t.Errorf("%s of another scheduler: Check with repair = %v, %+v; want ErrForeign, damage, no repair", name, err, rep)
		}
		if _, err := os.Stat(filepath.Join(a, metaName)); err != nil {
			t.Errorf("%s of another scheduler: the refused repair moved the files: %v", name, err)
		}
	}
}

// TestSchedulerOfAnotherTree: a whole scheduler directory opened for
// another URL tree (copied from another data directory, or its tree
// replaced) is refused with ErrForeign naming its meta file.
func TestSchedulerOfAnotherTree(t *testing.T) {
	x, y := [16]byte{1, 2, 3}, [16]byte{4, 5, 6}
	dir := idFixture(t, x)
	_, err := Open(dir, idConfig(y))
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), metaName) {
		t.Fatalf("opened for another tree: %v, want ErrForeign naming %s", err, metaName)
	}
	for _, id := range [][16]byte{x, {}} {
		s, err := Open(dir, idConfig(id))
		if err != nil {
			t.Fatalf("opened for TreeID %x: %v", id, err)
		}
		if s.Len() != 30 {
			t.Errorf("opened for TreeID %x: %d URLs", id, s.Len())
		}
		s.Close()
	}
}

// TestSchedulerUpgradeID: a scheduler from before format version 3 (no ID)
// is read; Open records Config.TreeID in every file, and then refuses
// another tree. An upgrade a crash cut short (array files done, the meta
// file not) is done again with the ID given.
func TestSchedulerUpgradeID(t *testing.T) {
	x, y := [16]byte{1, 2, 3}, [16]byte{4, 5, 6}
	for _, crashed := range []bool{false, true} {
		dir := idFixture(t, y)
		if crashed {
			b, _ := os.ReadFile(filepath.Join(dir, metaName))
			clear(b[8:headerSize])
			b[8] = 1
			os.WriteFile(filepath.Join(dir, metaName), b, 0o644)
		} else {
			setOldHeaders(t, dir)
		}
		if rep, err := Check(dir, false); err != nil || rep.Damaged() {
			t.Fatalf("crashed %v: Check before the upgrade: %v %v", crashed, err, rep.Findings)
		}
		s, err := Open(dir, idConfig(x))
		if err != nil {
			t.Fatalf("crashed %v: %v", crashed, err)
		}
		if s.Len() != 30 {
			t.Errorf("crashed %v: %d URLs", crashed, s.Len())
		}
		s.Close()
		for _, n := range []string{metaName, statesName, hostsName, namesName} {
			b, _ := os.ReadFile(filepath.Join(dir, n))
			if id := headerID(b); id != x {
				t.Errorf("crashed %v: %s has ID %x, want %x", crashed, n, id, x)
			}
		}
		if _, err := Open(dir, idConfig(y)); !errors.Is(err, ErrForeign) {
			t.Errorf("crashed %v: upgraded, opened for another tree: %v", crashed, err)
		}
		if rep, err := Check(dir, false); err != nil || rep.Damaged() {
			t.Errorf("crashed %v: Check after the upgrade: %v %v", crashed, err, rep.Findings)
		}
	}
}

// TestRepairKeepsTreeID: a meta file rewritten by a repair keeps the ID,
// so the scheduler still opens for its tree.
func TestRepairKeepsTreeID(t *testing.T) {
	x := [16]byte{1, 2, 3}
	dir := idFixture(t, x)
	path := filepath.Join(dir, metaName)
	b, _ := os.ReadFile(path)
	b = bytes.Clone(b)
	b[512+9] ^= 0x40
	os.WriteFile(path, b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.MetaRewritten {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	s, err := Open(dir, idConfig(x))
	if err != nil {
		t.Fatalf("after the repair: %v", err)
	}
	s.Close()
}

// TestRepairHeader: one flipped bit in a file's header (its version, its
// ID, its checksum) made check --repair move all four files away, and the
// next Open started an empty scheduler: every URL's state and every
// host's politeness lost to a bit. Now the header is rebuilt from the
// others' (the file copied into damaged/ first) and nothing else changes.
func TestRepairHeader(t *testing.T) {
	x := [16]byte{1, 2, 3}
	for _, name := range []string{metaName, statesName, hostsName, namesName} {
		for _, off := range []int{9, 20, 61} {
			dir := idFixture(t, x)
			path := filepath.Join(dir, name)
			b, _ := os.ReadFile(path)
			b[off] ^= 0x04
			os.WriteFile(path, b, 0o644)
			if rep, err := Check(dir, false); err != nil || !rep.Damaged() {
				t.Fatalf("%s byte %d flipped: Check = %v, %v", name, off, err, rep)
			}
			rep, err := Check(dir, true)
			if err != nil || !rep.Repaired || rep.HeadersRewritten != 1 {
				t.Fatalf("%s byte %d flipped: repair = %v, %+v", name, off, err, rep)
			}
			if kept, err := os.ReadFile(filepath.Join(rep.Quarantine, name)); err != nil || !bytes.Equal(kept, b) {
				t.Errorf("%s byte %d flipped: the damaged file not kept in %s: %v", name, off, rep.Quarantine, err)
			}
			if rep, err := Check(dir, false); err != nil || rep.Damaged() {
				t.Errorf("%s byte %d flipped: after the repair: %v, %v", name, off, err, rep.Findings)
			}
			s, err := Open(dir, idConfig(x))
			if err != nil {
				t.Fatalf("%s byte %d flipped: Open after the repair: %v", name, off, err)
			}
			if s.Len() != 30 || s.Hosts() != 3 || s.URL(29).State != InList {
				t.Errorf("%s byte %d flipped: after the repair %d URLs, %d hosts", name, off, s.Len(), s.Hosts())
			}
			s.Close()
		}
	}
	// With a damaged record besides, the states file's header is
	// rebuilt and the record salvaged.
	dir := idFixture(t, x)
	path := filepath.Join(dir, statesName)
	b, _ := os.ReadFile(path)
	b[20] ^= 0x04
	b[headerSize+5*recordSize+1] ^= 0x10
	os.WriteFile(path, b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.Repaired || rep.HeadersRewritten != 1 || rep.Salvaged != 1 {
		t.Fatalf("header and record: repair = %v, %+v", err, rep)
	}
	s, err := Open(dir, idConfig(x))
	if err != nil {
		t.Fatalf("header and record: Open after the repair: %v", err)
	}
	if s.Len() != 30 || s.URL(5) != (URLInfo{}) || s.URL(6).State != InList {
		t.Errorf("header and record: %d URLs, URL 5 %+v, URL 6 %+v", s.Len(), s.URL(5), s.URL(6))
	}
	s.Close()
}

// TestRepairMetaTmpSymlink: sched.meta.repair, the file a repair writes
// the new meta file to, made a symbolic link to another file (a system
// file, for a check run as root): the repair truncated the link's target
// and wrote the meta file into it. Now the name is removed and created
// anew: the target is left as it was.
func TestRepairMetaTmpSymlink(t *testing.T) {
	dir := idFixture(t, [16]byte{1})
	victim := filepath.Join(t.TempDir(), "passwd")
	const content = "root:x:0:0:root:/root:/bin/bash\n"
	if err := os.WriteFile(victim, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, metaName+".repair")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, metaName)
	b, _ := os.ReadFile(path)
	b[512+9] ^= 0x40
	os.WriteFile(path, b, 0o644)
	rep, err := Check(dir, true)
	if err != nil || !rep.MetaRewritten {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	if got, _ := os.ReadFile(victim); string(got) != content {
		t.Errorf("the file sched.meta.repair linked to holds %q now", got)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("sched.meta after the repair: %v, %v", fi, err)
	}
}

// TestOldForeignScheduler: a scheduler from before format version 3 (no
// tree ID) copied from another data directory was given this tree's ID
// and read as its own: its records, by the other tree's ids, sent lists
// out under one host holding URLs of others. Now Open, given the tree's
// hosts (Config.HostOf), refuses it with ErrForeign naming a URL whose
// host differs, leaves it without an ID, and still upgrades a scheduler
// of this tree.
func TestOldForeignScheduler(t *testing.T) {
	x := [16]byte{1, 2, 3}
	dir := idFixture(t, x) // URL i of host i%3
	setOldHeaders(t, dir)
	hosts := []string{"a.example", "b.example", "c.example"}
	other := idConfig(x)
	other.HostOf = func(id uint32) (string, bool) { return hosts[id/10], id < 30 } // another tree: URLs by host
	for range 2 {
		_, err := Open(dir, other)
		if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), `URL 1 is of host "b.example"`) || !strings.Contains(err.Error(), `host "a.example"`) {
			t.Fatalf("a scheduler of another tree from before format 3: Open = %v, want ErrForeign naming URL 1 and both hosts", err)
		}
		// Refused, its files are as they were: the header of format 4
		// (hops) would make the build that wrote them refuse them.
		if b, err := os.ReadFile(filepath.Join(dir, statesName)); err != nil || headerVersion(b) != oldVersion(magicStates) {
			t.Fatalf("sched.states after the refusal: version %d, %v; want %d", headerVersion(b), err, oldVersion(magicStates))
		}
	}
	own := idConfig(x)
	own.HostOf = func(id uint32) (string, bool) { // this tree, entry 7 lost to a repair
		return strings.ToUpper(hosts[id%3]), id != 7
	}
	s, err := Open(dir, own)
	if err != nil {
		t.Fatalf("a scheduler of this tree from before format 3: %v", err)
	}
	if s.Len() != 30 || s.URL(29).State != InList {
		t.Errorf("after the upgrade: %d URLs, URL 29 %+v", s.Len(), s.URL(29))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dir, other); err != nil {
		t.Errorf("upgraded, the hosts are checked no more (the ID is): %v", err)
	} else {
		s.Close()
	}
}

// TestCheckOldForeignScheduler: CheckFor said nothing of a scheduler from
// before format version 3 of another data directory, which Open, given
// the tree's hosts, refuses (TestOldForeignScheduler): kspider check said
// ok of a sched/ the node would not start with. Now CheckFor, given the
// same hosts, compares the same records: damage naming both hosts, not
// repaired, files as they were; a scheduler of this tree is ok; and
// CheckFor and Open agree on every damaged record too.
func TestCheckOldForeignScheduler(t *testing.T) {
	x := [16]byte{1, 2, 3}
	hosts := []string{"a.example", "b.example", "c.example"}
	other := func(id uint32) (string, bool) { return hosts[id/10], id < 30 }
	own := func(id uint32) (string, bool) { return strings.ToUpper(hosts[id%3]), id != 7 }
	dir := idFixture(t, x)
	setOldHeaders(t, dir)
	before := map[string][]byte{}
	for _, n := range []string{metaName, statesName, hostsName, namesName} {
		before[n], _ = os.ReadFile(filepath.Join(dir, n))
	}
	for _, repair := range []bool{false, true} {
		rep, err := CheckFor(dir, repair, x, "urltree.meta", other)
		if !rep.Damaged() || !rep.Compared || len(rep.Foreign) != 1 || !strings.Contains(fmt.Sprint(rep.Findings), `URL 1 is of host "b.example"`) {
			t.Fatalf("another tree's old scheduler, repair %v: %v, %+v; want damage naming URL 1", repair, err, rep)
		}
		if repair && !errors.Is(err, ErrForeign) {
			t.Errorf("repair: %v, want ErrForeign", err)
		}
	}
	for n, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, n)); !bytes.Equal(now, b) {
			t.Errorf("%s changed by the check", n)
		}
	}
	if rep, err := CheckFor(dir, false, x, "urltree.meta", own); err != nil || rep.Damaged() || !rep.Compared {
		t.Fatalf("this tree's old scheduler: %v, %+v", err, rep)
	}
	if rep, err := CheckFor(dir, false, x, "urltree.meta", nil); err != nil || rep.Damaged() || rep.Compared {
		t.Fatalf("no hosts to compare with: %v, %+v", err, rep)
	}
	// A damaged record is the decoders' to report, never compared (a
	// host number past the table read out of range).
	path := filepath.Join(dir, statesName)
	b, _ := os.ReadFile(path)
	b[headerSize+8*4+3] ^= 0xff
	os.WriteFile(path, b, 0o644)
	rep, err := CheckFor(dir, false, x, "urltree.meta", own)
	if err != nil || !rep.Damaged() || len(rep.Foreign) != 0 {
		t.Fatalf("damaged record: %v, %+v", err, rep)
	}
}

// TestOldSchedulerBesideEmptyTree: a scheduler from before format version
// 3 (no tree ID) beside a new, empty URL tree (another data directory's
// sched/ copied beside it, or its urls/ lost) had none of its records
// compared, the tree having no URL at their ids, and was given the tree's
// ID: the node crawled with URL states of another tree. Now Open refuses
// it with ErrForeign naming the directory and what to do, its files as
// they were, and CheckFor says so as damage, not repaired.
func TestOldSchedulerBesideEmptyTree(t *testing.T) {
	x := [16]byte{1, 2, 3}
	dir := idFixture(t, x)
	setOldHeaders(t, dir)
	before := map[string][]byte{}
	for _, n := range []string{metaName, statesName, hostsName, namesName} {
		before[n], _ = os.ReadFile(filepath.Join(dir, n))
	}
	empty := func(uint32) (string, bool) { return "", false }
	cfg := idConfig([16]byte{9, 9})
	cfg.HostOf = empty
	_, err := Open(dir, cfg)
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "has no URL at any") || !strings.Contains(err.Error(), "move "+dir+" away") {
		t.Fatalf("an old scheduler beside an empty tree: Open = %v, want ErrForeign saying the tree has none of its URLs and to move %s away", err, dir)
	}
	for _, repair := range []bool{false, true} {
		rep, _ := CheckFor(dir, repair, [16]byte{9, 9}, "urltree.meta", empty)
		if rep == nil || !rep.Damaged() || rep.Repaired || len(rep.Foreign) != 1 || !strings.Contains(fmt.Sprint(rep.Findings), "has no URL at any") {
			t.Fatalf("CheckFor, repair %v: %+v; want damage saying the tree has none of its URLs, not repaired", repair, rep)
		}
	}
	for n, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, n)); !bytes.Equal(now, b) {
			t.Errorf("%s changed by the refused Open or the check", n)
		}
	}
}
