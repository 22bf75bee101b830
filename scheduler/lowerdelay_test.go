package scheduler

import (
	"testing"
	"time"
)

// TestLoweredDelayAppliesAtOpen: a politeness delay lowered between runs
// (1 h to 1 s) had the hosts that had just fetched wait out the old one,
// since a stored wait was only cut to the longest wait the config could
// impose on any host (MaxBackoff, MaxRetryAfter: an hour). Now a stored
// wait is cut to what the config imposes on that host (its delay, its
// error back-off, at least ErrorDelay); a Retry-After stored holds, and
// so does an error back-off.
func TestLoweredDelayAppliesAtOpen(t *testing.T) {
	clk := newFakeClock(1, 1000*time.Hour, time.Second)
	dir := t.TempDir()
	cfg := basicConfig(clk)
	cfg.ListLen, cfg.MaxRetries, cfg.MinDelay = 1, 10, time.Hour
	s := mustOpen(t, dir, cfg)
	hosts := []string{"a.example", "b.example", "c.example"}
	for id := range uint32(12) {
		if _, err := s.Add(id, hosts[id/4], 0); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		lists := drain(t, s)
		if len(lists) != 3 {
			t.Fatalf("round %d: %d lists, want one per host", round, len(lists))
		}
		for _, l := range lists {
			o := Outcome{Kind: Fetched, Status: 200}
			switch {
			case l.Name == "c.example":
				o = Outcome{Kind: FailedTemp}
			case l.Name == "b.example" && round == 2:
				o.Status, o.RetryAfter = 429, 30*time.Minute
			}
			if err := s.Report(l.IDs[0], o); err != nil {
				t.Fatal(err)
			}
		}
		if round < 2 {
			clk.advance(61 * time.Minute)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.MinDelay = time.Second // ErrorDelay 10 s: c's three errors in a row wait 40 s
	s = mustOpen(t, dir, cfg)
	defer s.Close()
	out := func(step time.Duration) map[string]bool {
		clk.advance(step)
		got := map[string]bool{}
		for _, l := range drain(t, s) {
			got[l.Name] = true
			if err := s.Report(l.IDs[0], Outcome{Kind: Fetched, Status: 200}); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	// The first look, 5 s after the open, cuts the waits from then.
	if got := out(5 * time.Second); len(got) != 0 {
		t.Errorf("5 s after the open: lists for %v, want none (each host waits at least ErrorDelay)", got)
	}
	if got := out(11 * time.Second); !got["a.example"] || len(got) != 1 {
		t.Errorf("16 s after the open: lists for %v, want a.example's (the 1 h wait stored cut)", got)
	}
	if got := out(30 * time.Second); !got["c.example"] || len(got) != 1 {
		t.Errorf("46 s after the open: lists for %v, want c.example's (its error back-off held)", got)
	}
	if got := out(20 * time.Minute); got["b.example"] {
		t.Errorf("20 min after the open: b.example's list went out before its Retry-After")
	}
	if got := out(11 * time.Minute); !got["b.example"] {
		t.Errorf("31 min after the open: lists for %v, want b.example's (its Retry-After over)", got)
	}
}
