package cluster

import (
	"testing"
	"time"
)

// TestFetchSchedule: with url partitioning the nodes take turns on hosts
// (the configured phases); with host or domain partitioning a host has one
// node, which fetches it in every slot: one phase, node 0's turn always.
func TestFetchSchedule(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, by := range []Partition{ByURL, ByHost, ByDomain} {
		c := Config{Self: 2, Phases: 5, PhaseLength: 2 * time.Second, Epoch: epoch, Partition: by,
			Members: []Member{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}}
		if err := c.Check(); err != nil {
			t.Fatal(err)
		}
		s := c.FetchSchedule()
		if err := s.Validate(); err != nil {
			t.Fatalf("%v: %v", by, err)
		}
		if c.Turns() != (by == ByURL) {
			t.Errorf("%v: Turns %v", by, c.Turns())
		}
		if by == ByURL {
			if s != c.Schedule() {
				t.Errorf("url: FetchSchedule %+v, want Schedule %+v", s, c.Schedule())
			}
			continue
		}
		// Every instant of a few days: phase 0 active, the slot's ends at
		// most once a day (the guard only around them).
		guarded := 0
		for at := epoch; at.Before(epoch.Add(72 * time.Hour)); at = at.Add(7 * time.Second) {
			p := s.At(at, c.Self, 200*time.Millisecond)
			if p.Active != 0 {
				t.Fatalf("%v: phase %d active at %v", by, p.Active, at)
			}
			if !p.MayStart {
				guarded++
			}
		}
		if guarded > 3 {
			t.Errorf("%v: %d instants in a guard in 3 days", by, guarded)
		}
	}
}
