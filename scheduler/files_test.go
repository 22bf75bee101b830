package scheduler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostsFileExtended: sched.hosts extended with zeros to a sparse
// terabyte. decodeHosts made room for every record the file could hold,
// a 200 GB allocation, and Open died of it ("fatal error: runtime: out of
// memory"); now it reads the one host there is, and a clean close trims
// the file back.
func TestHostsFileExtended(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(10) {
		s.Add(id, "a.example", 0)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, hostsName)
	if err := os.Truncate(p, 1<<40); err != nil {
		t.Skipf("no sparse terabyte file here: %v", err)
	}
	s, err := Open(dir, basicConfig(clk))
	if err != nil {
		t.Fatal(err)
	}
	if s.Hosts() != 1 || s.Len() != 10 || s.URL(9).State != InList {
		t.Errorf("after the extension: %d hosts, %d URLs, URL 9 %+v", s.Hosts(), s.Len(), s.URL(9))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil {
		t.Error(err)
	} else if fi.Size() != headerSize+hostRecSize {
		t.Errorf("%s after a clean close: %d bytes, want %d", p, fi.Size(), headerSize+hostRecSize)
	}
}

// TestStatesFileExtended: sched.states extended with zeros to a sparse
// terabyte after a crash. Open checked every record the file could hold,
// zeros past the commit included: 42 s per 16 GB, most of an hour here.
// Now it reads up to where the file's data ends, keeping the records a
// killed writer left past the commit.
func TestStatesFileExtended(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(20) {
		if id == 10 {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		s.Add(id, "a.example", 0)
	}
	s.closeFiles() // kill -9: ids 10..19 are past the commit
	p := filepath.Join(dir, statesName)
	if err := os.Truncate(p, 1<<40); err != nil {
		t.Skipf("no sparse terabyte file here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(dir, basicConfig(clk))
		if err == nil {
			if s.Len() != 20 || s.URL(19).State != InList {
				err = fmt.Errorf("%d URLs, URL 19 %+v; want 20, in-list", s.Len(), s.URL(19))
			}
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Open of a states file extended to 1 TiB has not returned in 60 s")
	}
}

func TestCorruptFiles(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	base := t.TempDir()
	make := func(name string) string {
		dir := filepath.Join(base, name)
		s := mustOpen(t, dir, basicConfig(clk))
		for id := range uint32(100) {
			s.Add(id, fmt.Sprintf("h%d.example", id%7), 1)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	poke := func(path string, off int64, b byte) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte{b}, off); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file string
		off        int64
		b          byte
		want       error
	}{
		{"state", statesName, headerSize + 8*42 + 2, 0x77, ErrCorrupt},
		{"host", hostsName, headerSize + 64*3 + 9, 0x77, ErrCorrupt},
		{"name", namesName, headerSize + 4, 'X', ErrCorrupt},
		{"magic", statesName, 0, 'x', ErrCorrupt},
		{"version", hostsName, 8, 9, ErrCorrupt}, // the header checksum fails: damage, not a newer format
		{"meta", metaName, 512 + 8, 1, nil},      // the other slot is still good
	} {
		dir := make(tc.name)
		poke(filepath.Join(dir, tc.file), tc.off, tc.b)
		s, err := Open(dir, basicConfig(clk))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else {
				s.Close()
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: Open = %v, want %v naming %s", tc.name, err, tc.want, tc.file)
		}
	}
	dir := make("truncated")
	if err := os.Truncate(filepath.Join(dir, hostsName), headerSize+64*2); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, basicConfig(clk)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated host table: %v", err)
	}
	dir = make("nometa")
	os.Remove(filepath.Join(dir, metaName))
	if _, err := Open(dir, basicConfig(clk)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("missing meta: %v", err)
	}
}

// TestPowerLoss is what a power cut can leave that kill -9 cannot: pages
// written after the last Sync lost in part. A URL past the commit whose
// new host's record did not reach the disk is dropped and counted; the
// synced ones stay.
func TestPowerLoss(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(10) {
		s.Add(id, "old.example", 0)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Add(10, "new.example", 0)
	s.Add(11, "old.example", 0)
	killed(s)
	// The host record of new.example (host 1) never reached the disk.
	f, err := os.OpenFile(filepath.Join(dir, hostsName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, hostRecSize), headerSize+hostRecSize)
	f.Close()
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if o := s.Opened(); o.Dropped != 1 || o.Hosts != 1 || o.Clean {
		t.Fatalf("reopen: %+v", o)
	}
	if u := s.URL(10); u.State != Absent {
		t.Fatalf("URL 10: %+v", u)
	}
	if u := s.URL(11); u.State != InList {
		t.Fatalf("URL 11: %+v", u)
	}
	// Adding it again works and gives the host a number again.
	if added, err := s.Add(10, "new.example", 0); err != nil || !added {
		t.Fatalf("re-add: %v, %v", added, err)
	}
}

// TestFullDisk checks that a state file that cannot grow makes Add fail
// with an error naming it, and that the scheduler stays usable within
// what is mapped. (The descriptor is closed under the mapping, so that
// fallocate fails as it would on a full disk.)
func TestFullDisk(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, t.TempDir(), basicConfig(clk))
	defer s.Close()
	s.statesF.f.Close()
	if _, err := s.Add(3<<20, "a.example", 0); !errors.Is(err, ErrBadID) {
		t.Fatalf("Add of a wild id: %v", err)
	}
	_, err := s.Add(1<<20, "a.example", 0)
	if err == nil || !strings.Contains(err.Error(), statesName) {
		t.Fatalf("Add with a file that cannot grow: %v", err)
	}
	if _, err := s.Add(5, "a.example", 0); err != nil {
		t.Fatalf("Add within the mapping after a failed grow: %v", err)
	}
}

// TestCreateCrash: a crash inside Open's create (a node killed in its
// first milliseconds) leaves array files with only their headers, or a
// meta file being written; Open refused them for good ("exists without
// sched.meta"). Now it clears them and creates the scheduler; files that
// hold more than their headers still mean a lost meta file.
func TestCreateCrash(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	for _, tc := range []struct {
		name  string
		files []string
	}{
		{"states only", []string{statesName}},
		{"all arrays", []string{statesName, hostsName, namesName}},
		{"meta begun", []string{statesName, hostsName, namesName, metaName + newSuffix}},
	} {
		dir := t.TempDir()
		for _, n := range tc.files {
			if n == metaName+newSuffix {
				if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 100), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			m, err := createMapped(filepath.Join(dir, n), magicStates, [16]byte{1})
			if err != nil {
				t.Fatal(err)
			}
			m.close()
		}
		s, err := Open(dir, basicConfig(clk))
		if err != nil {
			t.Errorf("%s: Open after a crash in create: %v", tc.name, err)
			continue
		}
		if o := s.Opened(); !o.Created {
			t.Errorf("%s: %+v, want a new scheduler", tc.name, o)
		}
		if _, err := os.Stat(filepath.Join(dir, metaName+newSuffix)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %s left: %v", tc.name, metaName+newSuffix, err)
		}
		s.Close()
	}
	dir := t.TempDir()
	m, err := createMapped(filepath.Join(dir, statesName), magicStates, [16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	m.data[headerSize] = 1 // a record: a scheduler whose meta was lost
	m.close()
	if _, err := Open(dir, basicConfig(clk)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("states with a record, no meta: %v, want ErrCorrupt", err)
	}
}

// CloseUnclean keeps the mark off: the reopen sees what a crash after the
// close's sync leaves, every change kept, and a Close then marks it clean.
func TestCloseUnclean(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(5) {
		s.Add(id, "a.example", 0)
	}
	if err := s.CloseUnclean(); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseUnclean(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	if o := s.Opened(); o.Clean || o.URLs != 5 || o.Dropped != 0 {
		t.Fatalf("reopen after CloseUnclean: %+v", o)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if o := s.Opened(); !o.Clean || o.URLs != 5 {
		t.Fatalf("reopen after Close: %+v", o)
	}
}

// killed closes s as a kill -9 leaves it: the mappings' pages written, no
// commit.
func killed(s *Scheduler) {
	s.mu.Lock()
	s.closeFiles()
	s.closed = true
	s.mu.Unlock()
}
