package scheduler

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// statesByScan counts the URLs per state the slow way.
func statesByScan(s *Scheduler) [numStates]uint64 {
	var c [numStates]uint64
	for id := uint32(0); uint64(id) < s.Len(); id++ {
		if st := s.URL(id).State; st != Absent {
			c[st]++
		}
	}
	return c
}

func TestStatsCountsStates(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, dir, Config{Clock: clk, ListLen: 5, PartialWait: time.Millisecond})
	id := uint32(0)
	for h := 0; h < 6; h++ {
		for i := 0; i <= h*3; i++ {
			if _, err := s.Add(id, fmt.Sprintf("h%d.test", h), 0); err != nil {
				t.Fatal(err)
			}
			id++
		}
	}
	if _, err := s.Mark(id, "h0.test", 0, Filtered); err != nil {
		t.Fatal(err)
	}
	check := func(when string) Stats {
		t.Helper()
		st := s.Stats(3)
		if want := statesByScan(s); st.States != want {
			t.Fatalf("%s: Stats().States = %v, a scan counts %v", when, st.States, want)
		}
		return st
	}
	check("after adds")
	kinds := []Kind{Fetched, FailedTemp, Denied, FailedPerm, NotTried, Redirect}
	k := 0
	for round := 0; round < 4; round++ {
		clk.advance(10 * time.Second)
		for _, l := range drain(t, s) {
			st := check("lists out")
			if round == 0 && (len(st.TopQueued) != 3 || st.TopQueued[0].Name != "h5.test" ||
				st.TopQueued[0].Queued < st.TopQueued[1].Queued || st.TopQueued[1].Queued < st.TopQueued[2].Queued) {
				t.Fatalf("top queued = %+v, want 3 hosts, h5.test first, most first", st.TopQueued)
			}
			if st.Out == 0 || st.RowsUsed == 0 || st.HostsInView == 0 {
				t.Fatalf("lists out but %+v", st)
			}
			for _, id := range l.IDs {
				if err := s.Report(id, Outcome{Kind: kinds[k%len(kinds)]}); err != nil {
					t.Fatal(err)
				}
				k++
			}
		}
		check(fmt.Sprintf("round %d", round))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Config{Clock: clk})
	defer s.Close()
	check("reopened")
}

// TestStatsHugeTopK: Stats made room for topK hosts up front, and
// Stats(math.MaxInt) panicked ("makeslice: cap out of range"); now it
// returns the hosts there are.
func TestStatsHugeTopK(t *testing.T) {
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, t.TempDir(), Config{Clock: clk, ListLen: 5})
	defer s.Close()
	for id := range uint32(3) {
		s.Add(id, fmt.Sprintf("h%d.test", id), 0)
	}
	s.TryNext() // the scan queues the ids at their hosts
	if st := s.Stats(math.MaxInt); len(st.TopQueued) > 3 {
		t.Errorf("top of %d hosts: %+v", len(st.TopQueued), st.TopQueued)
	}
}
