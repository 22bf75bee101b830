package scheduler

import (
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
