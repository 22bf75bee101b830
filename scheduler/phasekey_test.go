package scheduler

import (
	"strings"
	"testing"
	"time"
)

// TestPhaseKey: with Config.PhaseKey, hosts whose keys agree share a phase,
// on creation and after a reopen.
func TestPhaseKey(t *testing.T) {
	dir := t.TempDir()
	key := func(name string) string { return strings.TrimPrefix(name, "https:") }
	cfg := Config{Clock: newFakeClock(7, time.Minute, 0), Phases: 7, PhaseKey: key}
	names := []string{"a.example", "https:a.example", "b.example", "https:b.example", "c.example", "https:c.example"}
	check := func(s *Scheduler) {
		t.Helper()
		for i := 0; i < len(names); i += 2 {
			var ph [2]int
			for j := range 2 {
				h, err := s.Host(names[i+j])
				if err != nil {
					t.Fatal(err)
				}
				hi, err := s.HostInfo(h)
				if err != nil {
					t.Fatal(err)
				}
				ph[j] = hi.Phase
			}
			if ph[0] != ph[1] || ph[0] != HostPhase(key(names[i]), 7) {
				t.Errorf("%s and %s: phases %v, want both %d", names[i], names[i+1], ph, HostPhase(key(names[i]), 7))
			}
		}
	}
	s, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
}
