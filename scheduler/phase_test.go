package scheduler

import (
	"testing"
	"time"
)

func TestPhaseAt(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cl := Cluster{Epoch: epoch, PhaseLength: 10 * time.Minute, Phases: 5, Nodes: 3}
	if err := cl.Validate(); err != nil {
		t.Fatal(err)
	}
	guard := 200 * time.Millisecond
	for _, tc := range []struct {
		at      time.Duration // since the epoch
		node    int
		slot    int64
		active  int
		left    time.Duration
		inGuard bool
	}{
		{0, 0, 0, 0, 10 * time.Minute, true},
		{time.Second, 0, 0, 0, 10*time.Minute - time.Second, false},
		{time.Second, 2, 0, 2, 10*time.Minute - time.Second, false},
		{10*time.Minute + time.Second, 0, 1, 1, 10*time.Minute - time.Second, false},
		{10*time.Minute + time.Second, 4 - 0, 1, 0, 10*time.Minute - time.Second, false},
		{37*time.Minute + 3*time.Second, 2, 3, 0, 2*time.Minute + 57*time.Second, false},
		{20*time.Minute - 100*time.Millisecond, 1, 1, 2, 100 * time.Millisecond, true},
		{20*time.Minute + 100*time.Millisecond, 1, 2, 3, 10*time.Minute - 100*time.Millisecond, true},
		{-time.Second, 0, -1, 4, time.Second, false},
		{-10*time.Minute - time.Second, 1, -2, 4, time.Second, false},
	} {
		p := cl.At(epoch.Add(tc.at), tc.node, guard)
		if p.Slot != tc.slot || p.Active != tc.active || p.Left != tc.left || p.InGuard != tc.inGuard || p.MayStart == tc.inGuard {
			t.Errorf("At(epoch%+v, node %d) = slot %d phase %d left %v guard %v, want slot %d phase %d left %v guard %v",
				tc.at, tc.node, p.Slot, p.Active, p.Left, p.InGuard, tc.slot, tc.active, tc.left, tc.inGuard)
		}
		if !p.End.Equal(p.Start.Add(cl.PhaseLength)) || p.Start.After(epoch.Add(tc.at)) {
			t.Errorf("slot bounds %v..%v around %v", p.Start, p.End, epoch.Add(tc.at))
		}
	}
}

// TestPhasesNeverCollide: in every slot the N nodes are in N different
// phases, and each node goes through all P phases in P slots.
func TestPhasesNeverCollide(t *testing.T) {
	epoch := time.Unix(0, 0)
	cl := Cluster{Epoch: epoch, PhaseLength: time.Minute, Phases: 7, Nodes: 5}
	for slot := int64(-20); slot < 20; slot++ {
		at := epoch.Add(time.Duration(slot)*time.Minute + 30*time.Second)
		seen := map[int]bool{}
		for node := range cl.Nodes {
			p := cl.At(at, node, 0)
			if seen[p.Active] {
				t.Fatalf("slot %d: two nodes in phase %d", slot, p.Active)
			}
			seen[p.Active] = true
		}
	}
	seen := map[int]bool{}
	for slot := range int64(cl.Phases) {
		seen[cl.At(epoch.Add(time.Duration(slot)*time.Minute), 3, 0).Active] = true
	}
	if len(seen) != cl.Phases {
		t.Errorf("node 3 visited %d of %d phases", len(seen), cl.Phases)
	}
}

func TestClusterValidate(t *testing.T) {
	epoch := time.Unix(1, 0)
	for _, cl := range []Cluster{
		{Epoch: epoch, PhaseLength: 0, Phases: 1, Nodes: 1},
		{Epoch: epoch, PhaseLength: time.Second, Phases: 1, Nodes: 2},
		{Epoch: epoch, PhaseLength: time.Second, Phases: 1, Nodes: 0},
		{PhaseLength: time.Second, Phases: 1, Nodes: 1},
	} {
		if cl.Validate() == nil {
			t.Errorf("%+v accepted", cl)
		}
	}
}

// FuzzPhaseAt: for any instant, length and cluster shape the slot contains
// the instant and the phase is in range.
func FuzzPhaseAt(f *testing.F) {
	f.Add(int64(0), int64(time.Minute), 3, 5, 1)
	f.Add(int64(-1), int64(time.Second), 1, 1, 0)
	f.Add(int64(1<<62), int64(7), 2, 9, 1)
	f.Fuzz(func(t *testing.T, since, length int64, nodes, phases, node int) {
		cl := Cluster{Epoch: time.Unix(1_700_000_000, 0), PhaseLength: time.Duration(length), Nodes: nodes, Phases: phases}
		if cl.Validate() != nil || node < 0 || node >= nodes || since > 1<<62 || since < -(1<<62) {
			return
		}
		now := cl.Epoch.Add(time.Duration(since))
		p := cl.At(now, node, time.Duration(length)/10)
		if p.Active < 0 || p.Active >= phases {
			t.Fatalf("phase %d of %d", p.Active, phases)
		}
		if now.Before(p.Start) || !now.Before(p.End) || p.Left <= 0 || p.Left > cl.PhaseLength {
			t.Fatalf("now %v outside slot %d [%v, %v), left %v", now, p.Slot, p.Start, p.End, p.Left)
		}
	})
}
