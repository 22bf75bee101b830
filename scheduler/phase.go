package scheduler

import (
	"fmt"
	"time"
)

// Cluster is the part of the cluster configuration the phase clock needs;
// every node must use the same values.
type Cluster struct {
	Epoch       time.Time     // start of slot 0
	PhaseLength time.Duration // length of one slot
	Phases      int           // P, at least Nodes
	Nodes       int           // N
}

// Validate reports what is wrong with c, if anything.
func (c Cluster) Validate() error {
	switch {
	case c.PhaseLength <= 0:
		return fmt.Errorf("scheduler: phase length %v is not positive", c.PhaseLength)
	case c.Nodes < 1:
		return fmt.Errorf("scheduler: %d nodes; need at least 1", c.Nodes)
	case c.Phases < c.Nodes:
		return fmt.Errorf("scheduler: %d phases for %d nodes; need at least as many phases as nodes", c.Phases, c.Nodes)
	case c.Epoch.IsZero():
		return fmt.Errorf("scheduler: no epoch")
	}
	return nil
}

// StartWindow is how long fetches may start in each slot of phaseLength
// with guard kept free at both ends; at or below zero, never.
func StartWindow(phaseLength, guard time.Duration) time.Duration {
	return phaseLength - 2*guard
}

// EpochRange is how far from now an epoch may lie. Go's durations end at
// 292 years: further off, now - epoch saturates, and every node would
// compute one slot for centuries and never swap phases.
const EpochRange = 100 * 365 * 24 * time.Hour

// CheckEpochNear reports an epoch further than EpochRange from now.
func CheckEpochNear(epoch, now time.Time) error {
	if d := now.Sub(epoch); d > EpochRange || d < -EpochRange {
		return fmt.Errorf("%s is more than 100 years from now", epoch.Format(time.RFC3339))
	}
	return nil
}

// Phase is where one node stands at one instant.
type Phase struct {
	Now    time.Time // the instant this phase was taken at
	Slot   int64     // t = floor((now - epoch) / phase_length)
	Active int       // (node + t) mod P
	Start  time.Time // start of the slot
	End    time.Time // end of the slot: the next swap
	Left   time.Duration

	// InGuard is true within Guard of either end of the slot, where the
	// nodes' clocks may disagree about which slot it is.
	InGuard bool
	Guard   time.Duration
	// Safe is the clock's verdict on its own error (see Clock.Safe).
	Safe bool
	// MayStart tells the scheduler whether to hand out new fetches now:
	// the clock is safe and not in a guard interval.
	MayStart bool
}

// At returns the phase of node at time now with the given guard, taking the
// clock as safe; Clock.Phase fills in the clock's own verdict.
func (c Cluster) At(now time.Time, node int, guard time.Duration) Phase {
	slot := floorDiv(now.Sub(c.Epoch), c.PhaseLength)
	start := c.Epoch.Add(time.Duration(slot) * c.PhaseLength)
	end := start.Add(c.PhaseLength)
	p := Phase{
		Now:    now,
		Slot:   slot,
		Active: int(mod(int64(node)+slot, int64(c.Phases))),
		Start:  start,
		End:    end,
		Left:   end.Sub(now),
		Guard:  guard,
		Safe:   true,
	}
	p.InGuard = now.Sub(start) < guard || p.Left <= guard
	p.MayStart = !p.InGuard
	return p
}

// floorDiv is a / b rounded towards minus infinity (b > 0), so that the
// slot before the epoch is -1, not 0.
func floorDiv(a, b time.Duration) int64 {
	q := int64(a / b)
	if a%b < 0 {
		q--
	}
	return q
}

// mod is a mod m in [0, m).
func mod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}
