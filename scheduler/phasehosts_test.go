package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPhaseHosts: the hosts of a phase with URLs waiting, each once, in
// the order of their first waiting id, bounded by max and by the ids
// looked at; hosts whose URLs are all out are not named.
func TestPhaseHosts(t *testing.T) {
	const phases = 4
	clock := newFakeClock(phases, time.Minute, 0)
	s := mustOpen(t, t.TempDir(), Config{Clock: clock, Phases: phases})
	defer s.Close()
	byPhase := map[int][]string{}
	var order []string // every host, in the order of its first id
	for i := range 60 {
		name := fmt.Sprintf("h%d.example", i%20) // three ids per host, interleaved
		if _, err := s.Add(uint32(i), name, 0); err != nil {
			t.Fatal(err)
		}
		if i < 20 {
			order = append(order, name)
			ph := HostPhase(name, phases)
			byPhase[ph] = append(byPhase[ph], name)
		}
	}
	for ph := range phases {
		if got := s.PhaseHosts(ph, 100, 1000); !slices.Equal(got, byPhase[ph]) {
			t.Errorf("phase %d: %v, want %v", ph, got, byPhase[ph])
		}
	}
	ph := HostPhase(order[0], phases)
	if got := s.PhaseHosts(ph, 1, 1000); !slices.Equal(got, byPhase[ph][:1]) {
		t.Errorf("max 1: %v, want %v", got, byPhase[ph][:1])
	}
	// A budget of 20 ids sees each host's first id only.
	if got := s.PhaseHosts(ph, 100, 20); !slices.Equal(got, byPhase[ph]) {
		t.Errorf("budget 20: %v, want %v", got, byPhase[ph])
	}
	if got := s.PhaseHosts(ph, 100, 1); len(got) != 1 {
		t.Errorf("budget 1: %v, want %s", got, order[0])
	}
	for _, bad := range []int{-1, phases} {
		if got := s.PhaseHosts(bad, 100, 1000); got != nil {
			t.Errorf("phase %d: %v", bad, got)
		}
	}
	// Hand out the active phase's lists: those hosts have nothing waiting.
	active := clock.Phase().Active
	for {
		l, ok, _, err := s.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if HostPhase(l.Name, phases) != active {
			t.Fatalf("list of %s, phase %d, in phase %d", l.Name, HostPhase(l.Name, phases), active)
		}
	}
	if got := s.PhaseHosts(active, 100, 1000); len(got) != 0 {
		t.Errorf("phase %d after its lists went out: %v", active, got)
	}
}
