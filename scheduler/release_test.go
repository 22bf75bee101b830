package scheduler

import (
	"errors"
	"testing"
	"time"
)

// TestRelease: a released list frees its host for the next list after the
// politeness wait while its ids stay in progress; they are reported later,
// a temporary failure among them goes back in the queue, and the host's
// element lives until the last is reported.
func TestRelease(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	cfg := basicConfig(clk)
	cfg.MinDelay = 2 * time.Second
	cfg.ListLen = 3
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	for id := range uint32(7) {
		s.Add(id, "a.example", 0)
	}
	h, _ := s.Host("a.example")
	check := func() {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := checkInvariants(s); err != nil {
			t.Fatal(err)
		}
	}
	take := func() []uint32 {
		t.Helper()
		ls := drain(t, s)
		if len(ls) > 1 {
			t.Fatalf("%d lists of one host at once", len(ls))
		}
		check()
		if len(ls) == 0 {
			return nil
		}
		return ls[0].IDs
	}
	first := take()
	if len(first) != 3 {
		t.Fatalf("first list %v", first)
	}
	if err := s.Report(first[0], Outcome{Kind: Fetched}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(h); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(h); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("second Release: %v", err)
	}
	if err := s.Release(99); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("Release of an unknown host: %v", err)
	}
	if l := take(); l != nil {
		t.Fatalf("list %v during the politeness wait", l)
	}
	clk.advance(2 * time.Second)
	second := take()
	if len(second) != 3 {
		t.Fatalf("no list after the released one's wait: %v", second)
	}
	for _, id := range first[1:] {
		if u := s.URL(id); u.State != InProgress {
			t.Fatalf("released id %d: %+v", id, u)
		}
	}
	// The released list's ids are reported while the second list is out.
	if err := s.Report(first[1], Outcome{Kind: Fetched}); err != nil {
		t.Fatal(err)
	}
	if err := s.Report(first[2], Outcome{Kind: FailedTemp}); err != nil {
		t.Fatal(err)
	}
	check()
	if u := s.URL(first[2]); u.State != Stalled {
		t.Fatalf("released id %d after a temporary failure: %+v", first[2], u)
	}
	for _, id := range second {
		if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
			t.Fatal(err)
		}
	}
	check()
	// The host's error streak ignores the released list's failure.
	if hi, _ := s.HostInfo(h); hi.ErrStreak != 0 {
		t.Fatalf("error streak %d after a released list's failure", hi.ErrStreak)
	}
	clk.advance(2 * time.Second)
	var rest []uint32
	for range 3 {
		ids := take()
		for _, id := range ids {
			s.Report(id, Outcome{Kind: Fetched})
		}
		rest = append(rest, ids...)
		clk.advance(2 * time.Second)
	}
	if len(rest) != 2 || s.URL(first[2]).State != Completed {
		t.Fatalf("the rest %v; the failed id %+v", rest, s.URL(first[2]))
	}
	if err := s.Report(first[1], Outcome{Kind: Fetched}); !errors.Is(err, ErrNotInFlight) {
		t.Fatalf("second report of a released id: %v", err)
	}
	check()
}

// TestReleasedReportsLinear: Report looked an id up among its host's
// released ids one by one, and took it out by moving the last one into
// its place, so reports in the order handed out scanned most of the list
// each: reporting 80,000 ids released by one host behind a slow store
// took 4 s, under the scheduler's lock. Now it costs the same per id
// however many wait: 8 times the ids takes about 8 times as long, not 64.
func TestReleasedReportsLinear(t *testing.T) {
	report := func(lists int) time.Duration {
		clk := newFakeClock(1, 1000*time.Hour, 0)
		cfg := basicConfig(clk)
		cfg.Window = 1 << 20
		s := mustOpen(t, t.TempDir(), cfg)
		defer s.Close()
		for id := range uint32(lists * 20) {
			if _, err := s.Add(id, "a.example", 0); err != nil {
				t.Fatal(err)
			}
		}
		var out []uint32
		for range lists {
			l, ok, _, err := s.TryNext()
			if !ok || err != nil {
				t.Fatalf("list %d of %d: %v, %v", len(out)/20, lists, ok, err)
			}
			out = append(out, l.IDs...)
			if err := s.Release(l.Host); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		for _, id := range out {
			if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	const limit = 24.0
	ratio := 0.0
	for attempt := 0; attempt < 4; attempt++ {
		small, large := report(250), report(2000)
		if ratio = float64(large) / float64(small); ratio < limit {
			return
		}
	}
	t.Errorf("reporting 8 times the released ids took %.1f times as long (want < %v)", ratio, limit)
}
