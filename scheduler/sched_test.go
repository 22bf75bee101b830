package scheduler

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHostHashStable(t *testing.T) {
	// These values are part of the format: every node must agree.
	for name, want := range map[string]uint64{
		"example.com":       0x4d07e1c6cc597ab7,
		"www.wikipedia.org": 0x464536f9e84f11f8,
		"127.0.0.1":         0x360fa4ade68d5ada,
	} {
		if got := HostHash(name); got != want {
			t.Errorf("HostHash(%q) = %#x, want %#x", name, got, want)
		}
	}
	if HostHash("Example.COM") != HostHash("example.com") {
		t.Error("HostHash is case-sensitive")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		id      uint32
		st      State
		retries uint8
		depth   uint8
		host    uint32
	}{{0, InList, 0, 0, 0}, {7, Stalled, 15, 255, 1<<32 - 1}, {1<<32 - 2, Redirected, 3, 9, 12345}} {
		r := makeRecord(tc.id, tc.st, tc.retries, tc.depth, tc.host)
		if err := checkRecord(tc.id, r); err != nil {
			t.Fatal(err)
		}
		if r.state() != tc.st || r.retries() != tc.retries || r.depth() != tc.depth || r.host() != tc.host {
			t.Errorf("%+v decoded as %v %d %d %d", tc, r.state(), r.retries(), r.depth(), r.host())
		}
		if checkRecord(tc.id+1, r) == nil {
			t.Errorf("record of %d accepted for %d", tc.id, tc.id+1)
		}
		if checkRecord(tc.id, r^4) == nil {
			t.Errorf("flipped record accepted")
		}
	}
}

func basicConfig(c *fakeClock) Config {
	return Config{Clock: c, Phases: c.cl.Phases, PartialWait: time.Second}
}

func TestAddTakeReport(t *testing.T) {
	clk := newFakeClock(1, time.Hour, time.Second)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	hosts := []string{"a.example", "B.example", "c.example"}
	if h, err := s.Host("www.maslacampaÑa.com.AR"); err != nil || h != 0 {
		t.Fatalf("Host of a non-ASCII name: %d, %v", h, err)
	}

	for id := range uint32(90) {
		if added, err := s.Add(id, hosts[id%3], uint8(id%5)); err != nil || !added {
			t.Fatalf("Add(%d) = %v, %v", id, added, err)
		}
	}
	if added, _ := s.Add(5, "c.example", 0); added {
		t.Fatal("second Add of id 5 reported new")
	}
	if d, _ := s.Depth(5); d != 0 {
		t.Fatalf("depth of 5 = %d after lowering, want 0", d)
	}
	seen := map[uint32]bool{}
	for round := 0; len(seen) < 90 && round < 10; round++ {
		for _, l := range drain(t, s) {
			if len(l.IDs) == 0 || len(l.IDs) > 20 {
				t.Fatalf("list of %d ids", len(l.IDs))
			}
			for _, id := range l.IDs {
				if seen[id] {
					t.Fatalf("id %d handed out twice", id)
				}
				seen[id] = true
				if hosts[id%3] != l.Name && l.Name != "b.example" {
					t.Fatalf("id %d in list of %s", id, l.Name)
				}
				if err := s.Report(id, Outcome{Kind: Fetched, Status: 200}); err != nil {
					t.Fatal(err)
				}
			}
		}
		clk.advance(time.Second)
	}
	if len(seen) != 90 {
		t.Fatalf("%d of 90 ids handed out", len(seen))
	}
	if _, err := Open(dir, basicConfig(clk)); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open of a directory in use: %v", err)
	}
	if err := s.Report(3, Outcome{}); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("second report: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, basicConfig(clk))
	defer s.Close()
	if o := s.Opened(); !o.Clean || o.URLs != 90 || o.Hosts != 4 {
		t.Fatalf("reopen: %+v", o)
	}
	for id := range uint32(90) {
		if u := s.URL(id); u.State != Completed {
			t.Fatalf("URL %d: %+v after reopen", id, u)
		}
	}
	if h, err := s.Host("b.example"); err != nil || h != 2 {
		t.Fatalf("Host(b.example) = %d, %v", h, err)
	}
	if h, err := s.Host("www.maslacampaÑa.com.ar"); err != nil || h != 0 {
		t.Fatalf("Host of a non-ASCII name after reopen: %d, %v", h, err)
	}
}

func TestPhasesAndGuard(t *testing.T) {
	clk := newFakeClock(4, 10*time.Second, time.Second)
	s := mustOpen(t, t.TempDir(), basicConfig(clk))
	defer s.Close()
	for id := range uint32(400) {
		if _, err := s.Add(id, fmt.Sprintf("h%d.example", id%40), 0); err != nil {
			t.Fatal(err)
		}
	}
	for step := 0; step < 80; step++ {
		p := clk.Phase()
		ls := drain(t, s)
		if !p.MayStart && len(ls) > 0 {
			t.Fatalf("%d lists handed out in a guard interval", len(ls))
		}
		for _, l := range ls {
			if HostPhase(l.Name, 4) != p.Active {
				t.Fatalf("host %s of phase %d handed out in phase %d", l.Name, HostPhase(l.Name, 4), p.Active)
			}
			if !l.Until.Equal(p.End.Add(-time.Second)) {
				t.Fatalf("Until %v, slot ends %v", l.Until, p.End)
			}
			for i, id := range l.IDs {
				k := Fetched
				if i%2 == 1 {
					k = NotTried
				}
				if err := s.Report(id, Outcome{Kind: k}); err != nil {
					t.Fatal(err)
				}
			}
		}
		clk.advance(700 * time.Millisecond)
	}
	for id := range uint32(400) {
		if u := s.URL(id); u.State != Completed {
			t.Fatalf("URL %d still %v after 8 slots", id, u.State)
		}
	}
}

func TestPoliteness(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	cfg := basicConfig(clk)
	cfg.MinDelay = 2 * time.Second
	cfg.ListLen = 2
	cfg.ErrorDelay = 10 * time.Second
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	for id := range uint32(10) {
		s.Add(id, "a.example", 0)
	}
	h, _ := s.Host("a.example")
	s.SetRobots(h, RobotsOK, 5*time.Second)
	take := func() []uint32 {
		ls := drain(t, s)
		if len(ls) > 1 {
			t.Fatalf("%d lists of one host at once", len(ls))
		}
		if len(ls) == 0 {
			return nil
		}
		return ls[0].IDs
	}
	ids := take()
	if len(ids) != 2 || take() != nil {
		t.Fatalf("first list %v", ids)
	}
	for _, id := range ids {
		s.Report(id, Outcome{Kind: Fetched})
	}
	clk.advance(4 * time.Second) // Crawl-delay 5 s beats MinDelay 2 s
	if l := take(); l != nil {
		t.Fatalf("list %v during the Crawl-delay", l)
	}
	clk.advance(time.Second)
	ids = take()
	if len(ids) != 2 {
		t.Fatalf("no list after the Crawl-delay")
	}
	s.Report(ids[0], Outcome{Kind: FailedTemp, Status: 503, RetryAfter: 30 * time.Second})
	s.Report(ids[1], Outcome{Kind: Fetched})
	clk.advance(29 * time.Second)
	if l := take(); l != nil {
		t.Fatalf("list %v before Retry-After", l)
	}
	clk.advance(time.Second)
	if ids := take(); len(ids) != 2 {
		t.Fatalf("no list after Retry-After")
	}
	if u := s.URL(4); u.State != InProgress {
		t.Fatalf("URL 4: %+v", u)
	}
}

// TestHugeDelays: a politeness wait too long to add to the time (it
// wrapped past 2^63 to a time in the past) let the host's next list go at
// once: MinDelay 2562047h, or ErrorDelay 150 years after two lists with
// errors. Such a Config, and such a SetMinDelay, is now an error; any
// other must hold the host back.
func TestHugeDelays(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, c := range []struct {
		name string
		set  func(*Config)
		o    Outcome // how each list ends
	}{
		{"MinDelay", func(c *Config) { c.MinDelay = huge }, Outcome{Kind: Fetched}},
		{"ErrorDelay", func(c *Config) { c.ErrorDelay = 150 * 365 * 24 * time.Hour }, Outcome{Kind: FailedTemp}},
	} {
		clk := newFakeClock(1, 1<<62, 0)
		cfg := basicConfig(clk)
		cfg.ListLen = 1
		c.set(&cfg)
		s, err := Open(t.TempDir(), cfg)
		if errors.Is(err, ErrConfig) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for id := range uint32(3) {
			s.Add(id, "a.example", 0)
		}
		for range 3 {
			ls := drain(t, s)
			if len(ls) == 0 {
				break // held back longer than the 2 h waited
			}
			s.Report(ls[0].IDs[0], c.o)
			clk.advance(time.Second)
			if ls := drain(t, s); len(ls) > 0 {
				t.Errorf("%s: list %v one second after the host's last", c.name, ls[0].IDs)
				break
			}
			clk.advance(2 * time.Hour)
		}
		s.Close()
	}
	s := mustOpen(t, t.TempDir(), basicConfig(newFakeClock(1, time.Hour, 0)))
	defer s.Close()
	if err := s.SetMinDelay(huge); err == nil {
		t.Errorf("SetMinDelay(%v) = nil", huge)
	}
}

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

// TestHugeColumns: Config.Columns of 2^63-25, a prime, kept Open in
// isPrime for good (d*d wrapped negative before it passed n), and a prime
// near 2^30 made Open allocate 9 GB; now Columns over MaxColumns is an
// error.
func TestHugeColumns(t *testing.T) {
	for _, cols := range []int{math.MaxInt64 - 24, 1<<30 + 3} {
		cfg := basicConfig(newFakeClock(1, time.Hour, 0))
		cfg.Columns = cols
		done := make(chan error, 1)
		go func() {
			s, err := Open(t.TempDir(), cfg)
			if err == nil {
				s.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrConfig) {
				t.Errorf("Open with %d columns = %v, want ErrConfig", cols, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Open with %d columns has not returned in 20 s", cols)
		}
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
	s.mu.Lock()
	s.closeFiles()
	s.closed = true
	s.mu.Unlock()
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

// TestRetries checks that a URL failing for now is retried after the
// error back-off, MaxRetries times, and then fails for good.
func TestRetries(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	cfg := basicConfig(clk)
	cfg.MaxRetries, cfg.ErrorDelay, cfg.MaxBackoff = 2, time.Second, 3*time.Second
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	s.Add(0, "a.example", 0)
	waits := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	for try := 0; try <= 2; try++ {
		ls := drain(t, s)
		if len(ls) != 1 || ls[0].IDs[0] != 0 {
			t.Fatalf("try %d: lists %+v", try, ls)
		}
		if err := s.Report(0, Outcome{Kind: FailedTemp, Status: 500}); err != nil {
			t.Fatal(err)
		}
		u := s.URL(0)
		if try < 2 && (u.State != Stalled || int(u.Retries) != try+1) {
			t.Fatalf("try %d: %+v", try, u)
		}
		if try == 2 {
			if u.State != Failed {
				t.Fatalf("after %d retries: %+v", try, u)
			}
			break
		}
		clk.advance(waits[try] - time.Millisecond)
		if ls := drain(t, s); len(ls) != 0 {
			t.Fatalf("try %d: list %+v before the back-off of %v ended", try, ls, waits[try])
		}
		clk.advance(time.Millisecond)
	}
	hi, _ := s.HostInfo(0)
	if hi.ErrStreak != 3 {
		t.Fatalf("error streak %d, want 3", hi.ErrStreak)
	}
}

// TestTornHostRecord: a kill -9 in the middle of putHost leaves a committed
// host record whose politeness fields do not match its checksum. After an
// unclean stop Open keeps it (its name verifies) and rewrites it, and
// Check calls it a note; after a clean close the same bytes are damage.
func TestTornHostRecord(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s, err := Open(dir, basicConfig(clk))
	if err != nil {
		t.Fatal(err)
	}
	for id := uint32(0); id < 50; id++ {
		s.Add(id, fmt.Sprintf("h%d.example", id%7), 1)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// A copy of the synced files is what a kill -9 now would leave.
	crashed := t.TempDir()
	for _, n := range []string{metaName, statesName, hostsName, namesName} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if n == hostsName {
			b[headerSize+3*hostRecSize+8] ^= 0x10 // host 3's next start; the checksum is the old one
		}
		if err := os.WriteFile(filepath.Join(crashed, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(crashed, false)
	if err != nil || rep.Damaged() || len(rep.Findings) == 0 || !strings.Contains(rep.Findings[0].What, "host 3") {
		t.Fatalf("Check of the crashed copy: %v, %v", err, rep.Findings)
	}
	s2, err := Open(crashed, basicConfig(clk))
	if err != nil {
		t.Fatalf("Open after a torn host record: %v", err)
	}
	if n := s2.Opened().TornHosts; n != 1 {
		t.Errorf("TornHosts = %d, want 1", n)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(crashed, false); err != nil || len(rep.Findings) != 0 {
		t.Errorf("Check after the reopen and a clean close: %v, %v", err, rep.Findings)
	}

	// The same flip after a clean close is damage: no write was in flight.
	b, err := os.ReadFile(filepath.Join(dir, hostsName))
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+3*hostRecSize+8] ^= 0x10
	if err := os.WriteFile(filepath.Join(dir, hostsName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, basicConfig(clk)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open of a cleanly closed scheduler with a bad host checksum: %v, want ErrCorrupt", err)
	}
}

// TestURLLimit: records past the commit with ids the node's URL tree lost
// in a crash are dropped at Open; committed ones are kept whatever the limit.
func TestURLLimit(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(10) {
		s.Add(id, "old.example", 0)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for id := uint32(10); id < 15; id++ {
		s.Add(id, "old.example", 0)
	}
	s.mu.Lock() // a crash: no sync, no clean mark
	s.closeFiles()
	s.closed = true
	s.mu.Unlock()
	cfg := basicConfig(clk)
	cfg.URLLimit = 12 // the tree kept ids 0..11
	s = mustOpen(t, dir, cfg)
	if o := s.Opened(); o.Dropped != 3 || s.Len() != 12 {
		t.Fatalf("reopen: %+v, Len %d", o, s.Len())
	}
	if u := s.URL(11); u.State != InList {
		t.Fatalf("URL 11: %+v", u)
	}
	if u := s.URL(12); u.State != Absent {
		t.Fatalf("URL 12: %+v", u)
	}
	if added, err := s.Add(12, "other.example", 1); err != nil || !added {
		t.Fatalf("re-add 12: %v, %v", added, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.URLLimit = 5 // below the commit: nothing committed is dropped
	s = mustOpen(t, dir, cfg)
	defer s.Close()
	if o := s.Opened(); o.Dropped != 0 || s.Len() != 13 {
		t.Fatalf("reopen below the commit: %+v, Len %d", o, s.Len())
	}
}

// TestURLLimitZero: a tree a crash left with no id (before its first
// sync) drops every record past the commit when LimitURLs says 0 is a
// limit; without it 0 is none, as before.
func TestURLLimitZero(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	for id := range uint32(3) {
		s.Add(id, "new.example", 0)
	}
	s.mu.Lock() // a crash before any sync
	s.closeFiles()
	s.closed = true
	s.mu.Unlock()
	cfg := basicConfig(clk)
	cfg.LimitURLs = true
	s = mustOpen(t, dir, cfg)
	defer s.Close()
	if o := s.Opened(); o.Dropped != 3 || s.Len() != 0 {
		t.Fatalf("reopen with limit 0: %+v, Len %d", o, s.Len())
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

// TestCrashTrimsPages: the count of pages a host admitted (AdmitPage) is
// written in place and survives a kill -9, the URLs admitted since the
// last sync do not (the node's tree loses them: URLLimit). Found again
// after the restart, they were counted twice, so each crash took a few
// pages from the host's budget for good (the crash soak: a host with 11
// admitted and 6 URLs). Open after an unclean stop lowers the count to the
// URLs the host has.
func TestCrashTrimsPages(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	dir := t.TempDir()
	s := mustOpen(t, dir, basicConfig(clk))
	h, err := s.Host("a.example")
	if err != nil {
		t.Fatal(err)
	}
	admit := func(id uint32) {
		if ok, err := s.AdmitPage(h, 10); !ok || err != nil {
			t.Fatalf("admit %d: %v, %v", id, ok, err)
		}
		s.Add(id, "a.example", 0)
	}
	for id := range uint32(3) {
		admit(id)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	admit(3)
	admit(4)
	s.mu.Lock() // a crash; the tree kept ids 0..2
	s.closeFiles()
	s.closed = true
	s.mu.Unlock()
	cfg := basicConfig(clk)
	cfg.URLLimit = 3
	s = mustOpen(t, dir, cfg)
	defer s.Close()
	info, err := s.HostInfo(h)
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Opened(); info.Pages != 3 || o.PagesTrimmed != 1 || o.Dropped != 2 {
		t.Errorf("after the crash: %d pages admitted, want 3; %+v", info.Pages, o)
	}
}
