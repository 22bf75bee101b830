package resolver

import (
	"runtime"
	"testing"
	"time"
)

// The coarse clock parks after coarseIdle ticks without a read, and the
// first read after that returns the current time and restarts it.
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
	if s := c.state.Load(); s == coarseParked {
		t.Fatal("still parked after a read")
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

// Concurrent readers of a parked clock wake it once and never block.
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
		done := make(chan int64, 8)
		for range 8 {
			go func() { done <- c.read() }()
		}
		for range 8 {
			if v := <-done; v == 0 {
				t.Fatal("zero time")
			}
		}
	}
}
