package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// offsetClock is the system clock moved by off (an NTP-corrected clock, or
// SoloClock ahead after a step back), counting its readings.
type offsetClock struct {
	off   time.Duration
	reads atomic.Int64
}

func (c *offsetClock) Phase() Phase {
	c.reads.Add(1)
	cl := Cluster{Epoch: time.Unix(0, 0), PhaseLength: 24 * time.Hour, Phases: 1, Nodes: 1}
	return cl.At(time.Now().Add(c.off), 0, 0)
}

// TestNextWaitsByThePhaseClock: Next timed its sleep to a timer's instant
// (phase clock time) by the system clock. With the phase clock an hour
// ahead the sleep was MaxWait, however close the timer (a host's next
// list after its politeness delay came that late); an hour behind, it
// woke at once, again and again, a busy wait until the timer. Now it
// sleeps until the timer by the phase clock.
func TestNextWaitsByThePhaseClock(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		clk := &offsetClock{off: off}
		s := mustOpen(t, t.TempDir(), Config{Clock: clk, Phases: 1, ListLen: 1, MinDelay: 200 * time.Millisecond, MaxWait: time.Minute})
		for id := range uint32(2) {
			if _, err := s.Add(id, "a.example", 0); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		l, err := s.Next(ctx)
		if err == nil {
			err = s.Report(l.IDs[0], Outcome{Kind: Fetched})
		}
		if err != nil {
			t.Fatal(err)
		}
		before := clk.reads.Load()
		l, err = s.Next(ctx)
		cancel()
		if err != nil || len(l.IDs) != 1 {
			t.Errorf("clock off by %v: Next = %+v, %v; want the host's second list after its politeness delay", off, l, err)
		}
		// A few readings per wake-up, not one per millisecond of the wait.
		if n := clk.reads.Load() - before; n > 20 {
			t.Errorf("clock off by %v: %d clock readings for one wait of 200 ms", off, n)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
