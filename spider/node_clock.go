package spider

import (
	"sync"
	"time"

	"github.com/kspider/kspider/scheduler"
)

// SoloClock is the phase source of a one-node cluster with one phase and no
// NTP: the active phase is always 0, the clock is taken as safe, and the
// slots are a day long (their ends only make the scheduler rescan).
//
// Its time is the system clock's, but never stepped back: the scheduler
// keeps the instants its hosts' politeness waits and retries end, and
// with the clock stepped back an hour (by hand, a VM restored, an NTP
// daemon's step) a host waiting then waited that hour, holding its row of
// the buckets. So when the system clock falls behind, the solo clock goes
// on from where it was at half the monotonic clock's pace until the
// system clock catches up (after twice the step): waits meanwhile last up
// to twice as long (the scheduler measures them on this clock). A step
// forward is followed (waits end early, once). Instants stored ahead of
// the next run's clock are cut at its open to the wait the config imposes
// on the host (the scheduler's hostWait).
func SoloClock() scheduler.PhaseSource { return newSoloClock(systemClock()) }

// wallMono reads the system clock's time, for instants shown or stored,
// and the time since some start on a clock never stepped, for lengths of
// time: a clock stepped back (by hand, a VM restored, an NTP daemon's
// step) must not make them negative. Tests give one that steps.
type wallMono func() (wall time.Time, mono time.Duration)

// systemClock is wallMono on the system clock and Go's monotonic clock.
func systemClock() wallMono {
	start := time.Now()
	return func() (time.Time, time.Duration) {
		t := time.Now()
		return t, t.Sub(start) // by the monotonic clock
	}
}

// newSoloClock is SoloClock on now.
func newSoloClock(now wallMono) *soloClock {
	return &soloClock{now: now}
}

type soloClock struct {
	now wallMono

	mu     sync.Mutex
	last   time.Time     // the time last given; zero: none yet
	atMono time.Duration // the monotonic reading then
}

func (c *soloClock) Phase() scheduler.Phase {
	wall, mono := c.now()
	c.mu.Lock()
	t := wall
	if !c.last.IsZero() {
		if kept := c.last.Add((mono - c.atMono) / 2); kept.After(t) {
			t = kept
		}
	}
	c.last, c.atMono = t, mono
	c.mu.Unlock()
	cl := scheduler.Cluster{Epoch: time.Unix(0, 0).UTC(), PhaseLength: 24 * time.Hour, Phases: 1, Nodes: 1}
	return cl.At(t, 0, 0)
}
