package resolver

import (
	"runtime"
	"testing"
	"time"
)

// The coarse clock parks after coarseIdle ticks without a read; parked, a
// read returns the current time and leaves it parked, and a burst of reads
// restarts it.
func TestCoarseClockParks(t *testing.T) {
	c := newCoarseClock()
	defer c.close()
	if d := time.Since(time.Unix(0, c.read())); d < -time.Millisecond || d > time.Second {
		t.Fatalf("fresh clock %v off", d)
	}
	waitState := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for c.state.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("state %d, want %d after 10 s", c.state.Load(), want)
			}
			runtime.Gosched()
		}
	}
	waitState(coarseParked)
	stale := c.now.Load()
	before := time.Now().UnixNano()
	got := c.read()
	if got < before || got <= stale {
		t.Fatalf("read after parking: %d, want >= %d (stale %d)", got, before, stale)
	}
	if s := c.state.Load(); s != coarseParked {
		t.Fatalf("state %d after one read of a parked clock, want parked", s)
	}
	// A burst restarts it (bounded: a descheduled loop may straddle a tick).
	for i := 0; c.state.Load() == coarseParked; i++ {
		if i == 1_000_000 {
			t.Fatal("a million reads did not restart the clock")
		}
		got = c.read()
	}
	// Ticking again: the stored time moves on its own.
	deadline := time.Now().Add(10 * time.Second)
	for c.now.Load() == got {
		if time.Now().After(deadline) {
			t.Fatal("clock did not tick after unparking")
		}
		runtime.Gosched()
	}
	// Parks again once unread.
	waitState(coarseParked)
}

// Concurrent readers of a parked clock wake it at most once and never block.
func TestCoarseClockConcurrentWake(t *testing.T) {
	c := newCoarseClock()
	defer c.close()
	for round := 0; round < 3; round++ {
		deadline := time.Now().Add(10 * time.Second)
		for c.state.Load() != coarseParked {
			if time.Now().After(deadline) {
				t.Fatal("clock never parked")
			}
			runtime.Gosched()
		}
		const readers = 4 * coarseBurst
		done := make(chan int64, readers)
		for range readers {
			go func() { done <- c.read() }()
		}
		for range readers {
			if v := <-done; v == 0 {
				t.Fatal("zero time")
			}
		}
	}
}

// TestCoarseClockMonotonic: the clock the cache and the servers' down
// times run on was the wall clock, so a step of the system clock back
// (NTP setting right a clock hours ahead) kept every cached answer and
// failure, and every server marked down, for as much longer. Now it is the
// wall clock at its start plus the monotonic time since. The system clock
// cannot be stepped on a shared machine, so this checks that reads follow
// the monotonic clock from a start that has a monotonic reading.
func TestCoarseClockMonotonic(t *testing.T) {
	c := newCoarseClock()
	defer c.close()
	if c.start == c.start.Round(0) {
		t.Fatal("the clock's start has no monotonic reading: reads would follow the wall clock")
	}
	before := int64(time.Since(c.start))
	got := c.read() - c.start.UnixNano()
	after := int64(time.Since(c.start))
	if got < before-int64(coarseTick) || got > after {
		t.Errorf("read %d ns after the start, want between %d and %d (the monotonic time since, one tick stale at most)", got, before-int64(coarseTick), after)
	}
}
