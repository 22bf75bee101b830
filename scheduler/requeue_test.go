package scheduler

import (
	"errors"
	"testing"
	"time"
)

// TestRequeueFiltered: a URL reported Dropped (Filtered) is final; Requeue
// makes it in-list again, handed out once more, and kept so across a
// reopen. Other states are left alone, an unknown id is an error.
func TestRequeueFiltered(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock(1, time.Hour, 0)
	s := mustOpen(t, dir, Config{Clock: clk, ListLen: 5, PartialWait: time.Millisecond})
	for id := uint32(0); id < 4; id++ {
		if _, err := s.Add(id, "h.test", 2); err != nil {
			t.Fatal(err)
		}
	}
	ls := drain(t, s)
	if len(ls) != 1 || len(ls[0].IDs) != 4 {
		t.Fatalf("lists %+v, want one of 4 ids", ls)
	}
	kinds := map[uint32]Kind{0: Dropped, 1: Fetched, 2: Dropped, 3: Denied}
	for _, id := range ls[0].IDs {
		if err := s.Report(id, Outcome{Kind: kinds[id]}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[uint32]bool{0: true, 1: false, 3: false} {
		if got, err := s.Requeue(id); err != nil || got != want {
			t.Errorf("Requeue(%d) = %v, %v, want %v", id, got, err, want)
		}
	}
	if _, err := s.Requeue(9); !errors.Is(err, ErrUnknownURL) {
		t.Errorf("Requeue of an id never added: %v, want ErrUnknownURL", err)
	}
	if st := s.Stats(0).States; st != statesByScan(s) {
		t.Errorf("Stats().States = %v, a scan counts %v", st, statesByScan(s))
	}
	clk.advance(10 * time.Second)
	ls = drain(t, s)
	if len(ls) != 1 || len(ls[0].IDs) != 1 || ls[0].IDs[0] != 0 {
		t.Fatalf("lists after Requeue(0): %+v, want id 0 alone", ls)
	}
	if err := s.Report(0, Outcome{Kind: NotTried}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Requeue(2); err != nil || !got {
		t.Fatalf("Requeue(2) = %v, %v", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Config{Clock: clk, ListLen: 5, PartialWait: time.Millisecond})
	defer s.Close()
	for id, want := range map[uint32]State{0: InList, 1: Completed, 2: InList, 3: RobotsDenied} {
		if u := s.URL(id); u.State != want || u.Depth != 2 {
			t.Errorf("after reopening, URL %d is %+v, want %v at depth 2", id, u, want)
		}
	}
}
