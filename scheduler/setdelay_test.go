package scheduler

import (
	"testing"
	"time"
)

// TestSetMinDelayLowersWaits: the politeness delay lowered during a run
// (kspider ctl set delay=1s, after 1h) applied only to the lists that
// ended from then on: a host whose list had just ended waited out the
// hour, holding its row. Now the waits running are cut to what the config
// imposes on each host (at least ErrorDelay); a Retry-After still holds.
func TestSetMinDelayLowersWaits(t *testing.T) {
	clk := newFakeClock(1, 1000*time.Hour, 0)
	cfg := basicConfig(clk)
	cfg.ListLen, cfg.MinDelay = 1, time.Hour
	s := mustOpen(t, t.TempDir(), cfg)
	defer s.Close()
	for id := range uint32(4) {
		if _, err := s.Add(id, []string{"a.example", "b.example"}[id%2], 0); err != nil {
			t.Fatal(err)
		}
	}
	lists := drain(t, s)
	if len(lists) != 2 {
		t.Fatalf("%d lists, want one per host", len(lists))
	}
	for _, l := range lists {
		o := Outcome{Kind: Fetched, Status: 200}
		if l.Name == "b.example" {
			o.Status, o.RetryAfter = 503, 20*time.Minute
		}
		if err := s.Report(l.IDs[0], o); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetMinDelay(time.Second); err != nil {
		t.Fatal(err)
	}
	clk.advance(11 * time.Second) // ErrorDelay, 10 s, is the least a wait is cut to
	got := drain(t, s)
	if len(got) != 1 || got[0].Name != "a.example" {
		t.Errorf("11 s after the delay was lowered to 1 s: %d lists (%+v), want a.example's", len(got), got)
	}
	clk.advance(10 * time.Minute)
	if got := drain(t, s); len(got) != 0 {
		t.Errorf("10 min on: %+v, want none (b.example's Retry-After runs 20 min)", got)
	}
}
