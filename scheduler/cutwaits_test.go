package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// TestCutWaitsKeepsNoStaleTimers: each lowering of the politeness delay
// (kspider ctl set delay=…) added a timer per host waiting and left the
// one it replaced in the heap until its time, up to MaxDelay away: a
// script lowering the delay step by step piled up hosts × steps timers,
// each looked at again by every fire. Now the heap keeps only timers an
// element still waits for.
func TestCutWaitsKeepsNoStaleTimers(t *testing.T) {
	const hosts, steps = 50, 200
	clk := newFakeClock(1, 1000*time.Hour, 0)
	cfg := basicConfig(clk)
	cfg.ListLen, cfg.MinDelay = 1, time.Hour
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	for id := range uint32(2 * hosts) {
		if _, err := s.Add(id, fmt.Sprintf("h%d.example", id%hosts), 0); err != nil {
			t.Fatal(err)
		}
	}
	lists := drain(t, s)
	if len(lists) != hosts {
		t.Fatalf("%d lists, want one per host", len(lists))
	}
	for _, l := range lists {
		if err := s.Report(l.IDs[0], Outcome{Kind: Fetched, Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range steps {
		if err := s.SetMinDelay(time.Hour - time.Duration(i+1)*time.Second); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		n := len(s.rt.events)
		s.mu.Unlock()
		if n > 2*hosts {
			t.Fatalf("after %d lowerings of the delay: %d timers in the heap for %d hosts waiting", i+1, n, hosts)
		}
	}
	if err := s.SetMinDelay(time.Second); err != nil {
		t.Fatal(err)
	}
	clk.advance(11 * time.Second) // ErrorDelay, 10 s, is the least a wait is cut to
	if got := drain(t, s); len(got) != hosts {
		t.Errorf("11 s after the delay was lowered to 1 s: %d lists, want %d", len(got), hosts)
	}
}
