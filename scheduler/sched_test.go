package scheduler

import (
	"errors"
	"fmt"
	"math"
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
	}{{0, InList, 0, 0, 0}, {7, Stalled, 15, 255, gapHost}, {1<<32 - 2, Redirected, 3, 9, 12345}} {
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
