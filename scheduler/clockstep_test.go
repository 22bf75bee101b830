package scheduler

import (
	"testing"
	"time"
)

// TestWaitFromAClockAhead: a run whose clock was ten years ahead (set
// wrong, a VM restored) stored its hosts' politeness waits as ten years
// from now; once the clock was right again those hosts waited ten years,
// holding their rows of the buckets all the while, and the crawl never
// ended. No wait is longer than the longest the config imposes (here an
// hour, the default MaxBackoff and MaxRetryAfter), so now one that is, is
// cut to that from now.
func TestWaitFromAClockAhead(t *testing.T) {
	dir := t.TempDir()
	ahead := newFakeClock(1, time.Hour, 0)
	ahead.advance(10 * 365 * 24 * time.Hour)
	cfg := basicConfig(ahead)
	cfg.MinDelay = time.Second
	s := mustOpen(t, dir, cfg)
	for id := range uint32(4) {
		if _, err := s.Add(id, "a.example", 1); err != nil {
			t.Fatal(err)
		}
	}
	ahead.advance(2 * time.Second)
	l, ok, _, err := s.TryNext()
	if err != nil || !ok {
		t.Fatalf("first list: %v %v", ok, err)
	}
	for _, id := range l.IDs {
		if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint32(4); id < 8; id++ {
		if _, err := s.Add(id, "a.example", 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	right := newFakeClock(1, time.Hour, 0)
	cfg.Clock = right
	s = mustOpen(t, dir, cfg)
	defer s.Close()
	if _, _, _, err := s.TryNext(); err != nil { // the scan finds the host waiting
		t.Fatal(err)
	}
	right.advance(time.Hour + time.Second)
	if l, ok, _, err := s.TryNext(); err != nil || !ok || len(l.IDs) != 4 {
		t.Errorf("with the clock right again, an hour on: list %+v, %v, %v; want ids 4..7", l, ok, err)
	}
	if info, _ := s.HostInfo(l.Host); info.NextStart.After(right.Now()) {
		t.Errorf("the host's next start is still %v", info.NextStart)
	}
}

// TestClockBackDuringRun: the same clock ahead and then set right, but
// during one run: a host whose list ended while the clock was ten years
// ahead was in TIMEWAIT until then, in memory, where Open's cut of stored
// waits never looked, and held its row for ten years. Now a clock that
// steps back cuts the timers in memory as Open cuts stored waits: no
// longer than the wait the config imposes on the host (10 s here, its
// ErrorDelay; an hour suffices for the test).
func TestClockBackDuringRun(t *testing.T) {
	const decade = 10 * 365 * 24 * time.Hour
	clk := newFakeClock(1, time.Hour, 0)
	clk.advance(decade)
	cfg := basicConfig(clk)
	cfg.MinDelay, cfg.ListLen = time.Second, 4
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	for id := range uint32(8) {
		if _, err := s.Add(id, "a.example", 1); err != nil {
			t.Fatal(err)
		}
	}
	l, ok, _, err := s.TryNext()
	if err != nil || !ok || len(l.IDs) != 4 {
		t.Fatalf("first list: %+v %v %v", l, ok, err)
	}
	for _, id := range l.IDs {
		if err := s.Report(id, Outcome{Kind: Fetched}); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(-decade)
	if _, _, _, err := s.TryNext(); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour + time.Second)
	if l, ok, _, err := s.TryNext(); err != nil || !ok || len(l.IDs) != 4 {
		t.Errorf("clock set right again, an hour on: list %+v, %v, %v; want ids 4..7", l, ok, err)
	}
}
