package scheduler

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock is a PhaseSource whose time the test sets.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	cl     Cluster
	node   int
	guard  time.Duration
	unsafe bool
}

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock(phases int, length, guard time.Duration) *fakeClock {
	return &fakeClock{
		now:   testEpoch.Add(time.Second),
		cl:    Cluster{Epoch: testEpoch, PhaseLength: length, Phases: phases, Nodes: 1},
		guard: guard,
	}
}

func (f *fakeClock) Phase() Phase {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.cl.At(f.now, f.node, f.guard)
	if f.unsafe {
		p.Safe, p.MayStart = false, false
	}
	return p
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func mustOpen(t testing.TB, dir string, cfg Config) *Scheduler {
	t.Helper()
	s, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain takes every ready list now.
func drain(t testing.TB, s *Scheduler) []List {
	t.Helper()
	var out []List
	for {
		l, ok, _, err := s.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, l)
	}
}

func netipFor(id uint32) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + id%3)}) }

// checkInvariants checks the window's and buckets' internal invariants;
// the caller holds s.mu.
func checkInvariants(s *Scheduler) error {
	rt := &s.rt
	used := make([]int, len(rt.colUsed))
	out := 0
	queued := map[uint32]bool{}
	inProgress := map[uint32]int{} // host → its ids in progress
	for _, rec := range s.recs[:s.count] {
		if rec.added() && rec.state() == InProgress {
			inProgress[rec.host()]++
		}
	}
	for i := range rt.runs {
		r := &rt.runs[i]
		if s.runIdx[r.host] != int32(i)+1 {
			continue
		}
		if r.slotted {
			used[r.col]++
		}
		switch {
		case (r.state == Queuing || r.state == Fetching || r.state == TimeWait) && !r.slotted:
			return fmt.Errorf("host %d %v without a row", r.host, r.state)
		case r.state == Free && r.slotted:
			return fmt.Errorf("host %d FREE holding a row", r.host)
		case r.state == Fetching && len(r.inflight) == 0:
			return fmt.Errorf("host %d FETCHING with nothing out", r.host)
		case r.state != Fetching && len(r.inflight) > 0:
			return fmt.Errorf("host %d %v with %d ids out", r.host, r.state, len(r.inflight))
		case r.waiting && (r.state != Free || r.queued() == 0):
			return fmt.Errorf("host %d waits for a row as %v with %d queued", r.host, r.state, r.queued())
		case r.state == Free && r.queued() > 0 && !r.waiting && rt.started:
			return fmt.Errorf("host %d FREE with %d queued, not waiting for a row", r.host, r.queued())
		}
		for _, id := range r.inflight {
			if s.recs[id].state() != InProgress || s.recs[id].host() != r.host {
				return fmt.Errorf("id %d out for host %d is %v of host %d", id, r.host, s.recs[id].state(), s.recs[id].host())
			}
		}
		if n := inProgress[r.host]; n != len(r.inflight)+r.released {
			return fmt.Errorf("host %d has %d ids in progress, %d in its list out and %d released", r.host, n, len(r.inflight), r.released)
		}
		delete(inProgress, r.host)
		for _, id := range r.pending[r.head:] {
			if queued[id] || uint64(id) >= rt.scan {
				return fmt.Errorf("id %d queued twice or ahead of the scan (%d)", id, rt.scan)
			}
			queued[id] = true
			if st := s.recs[id].state(); (st != InList && st != Stalled) || s.recs[id].host() != r.host || int(s.phase[r.host]) != rt.active {
				return fmt.Errorf("id %d queued at host %d is %v of host %d", id, r.host, st, s.recs[id].host())
			}
		}
		out += len(r.inflight) + r.released
	}
	for h, n := range inProgress {
		return fmt.Errorf("host %d has %d ids in progress and no list out", h, n)
	}
	for c, n := range used {
		if n != int(rt.colUsed[c]) || n > s.cfg.Rows {
			return fmt.Errorf("column %d: %d rows taken, counted %d, %d rows", c, n, rt.colUsed[c], s.cfg.Rows)
		}
	}
	if out != rt.out {
		return fmt.Errorf("%d ids out, counted %d", out, rt.out)
	}
	for id := uint64(0); id < rt.lo; id++ {
		if s.recs[id].state().Unfinished() {
			return fmt.Errorf("id %d %v behind the window's start %d", id, s.recs[id].state(), rt.lo)
		}
	}
	if rt.scan < rt.lo {
		return fmt.Errorf("scan %d behind the window's start %d", rt.scan, rt.lo)
	}
	return nil
}
