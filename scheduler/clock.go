package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ClockConfig configures a Clock.
type ClockConfig struct {
	NTP NTPConfig

	// MaxOffset bounds the offset a safe clock may have measured; default
	// 100 ms.
	MaxOffset time.Duration
	// MaxSilence is how long the clock stays safe after the last round with
	// a good sample; default 10 × NTP.Interval.
	MaxSilence time.Duration
	// Guard is kept free of new fetches at both ends of every slot; default
	// 2 × MaxOffset.
	Guard time.Duration

	// Now is the system clock; default time.Now. Tests inject their own.
	Now func() time.Time
	// Mono is a clock that is never stepped, read alongside Now to see the
	// system clock stepped since the last good round; default the
	// process's monotonic time when Now is time.Now, else none (tests that
	// inject Now move it as they like).
	Mono func() time.Duration
}

// Clock is the system clock corrected by NTP, and the judge of its own
// error. It is safe for concurrent use.
type Clock struct {
	cfg ClockConfig

	mu       sync.Mutex
	offset   time.Duration
	synced   bool          // a round ever had a good sample
	lastGood time.Time     // local time of the last round with a good sample
	goodMono time.Duration // cfg.Mono then
	last     Measurement
	lastErr  error
}

// NewClock returns a clock that has not measured anything yet (and is
// therefore unsafe); call Measure or Run.
func NewClock(cfg ClockConfig) (*Clock, error) {
	cfg.NTP.setDefaults()
	if len(cfg.NTP.Servers) == 0 {
		return nil, fmt.Errorf("scheduler: no NTP servers configured")
	}
	if cfg.MaxOffset <= 0 {
		cfg.MaxOffset = 100 * time.Millisecond
	}
	if cfg.MaxSilence <= 0 {
		cfg.MaxSilence = 10 * cfg.NTP.Interval
	}
	if cfg.Guard <= 0 {
		cfg.Guard = 2 * cfg.MaxOffset
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
		if cfg.Mono == nil {
			start := time.Now()
			cfg.Mono = func() time.Duration { return time.Since(start) }
		}
	}
	return &Clock{cfg: cfg}, nil
}

// mono reads cfg.Mono, 0 if there is none.
func (c *Clock) mono() time.Duration {
	if c.cfg.Mono == nil {
		return 0
	}
	return c.cfg.Mono()
}

// Guard returns the guard interval at each end of a slot.
func (c *Clock) Guard() time.Duration { return c.cfg.Guard }

// Measure runs one round against the NTP servers and, if any answer was
// good, adopts its median offset.
func (c *Clock) Measure(ctx context.Context) (Measurement, error) {
	mono := c.mono()
	m, err := measure(ctx, &c.cfg.NTP, c.cfg.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.lastErr = m, err
	if err == nil {
		c.offset, c.synced, c.lastGood, c.goodMono = m.Offset, true, m.At, mono
	}
	return m, err
}

// Run measures every NTP.Interval until ctx is done. Failed rounds are kept
// for Status; the clock turns unsafe by itself after MaxSilence.
func (c *Clock) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.NTP.Interval)
	defer t.Stop()
	for {
		c.Measure(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Now returns the corrected time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	off := c.offset
	c.mu.Unlock()
	return c.cfg.Now().Add(off)
}

// Status is the clock's view of itself.
type Status struct {
	Offset   time.Duration // applied to the system clock
	Synced   bool          // some round had a good sample
	LastGood time.Time     // local time of the last good round
	Last     Measurement   // the last round, good or not
	LastErr  error         // its error
	Safe     bool
	Reason   string // why the clock is unsafe; empty when safe
}

// Status returns the offset and the safety verdict.
func (c *Clock) Status() Status {
	now, mono := c.cfg.Now(), c.mono()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Offset: c.offset, Synced: c.synced, LastGood: c.lastGood, Last: c.last, LastErr: c.lastErr, Safe: true}
	// The offset holds for the system clock as it was at the last good
	// round: stepped since (by hand, by an NTP daemon's step), the
	// corrected time is off by the step until the next good round.
	step := now.Round(0).Sub(c.lastGood.Round(0)) - (mono - c.goodMono)
	if c.cfg.Mono == nil {
		step = 0
	}
	switch {
	case !c.synced:
		s.Safe, s.Reason = false, "no NTP server has answered yet"
	case c.offset > c.cfg.MaxOffset || c.offset < -c.cfg.MaxOffset:
		s.Safe, s.Reason = false, fmt.Sprintf("offset %v exceeds the bound %v", c.offset, c.cfg.MaxOffset)
	case step > c.cfg.MaxOffset || step < -c.cfg.MaxOffset:
		s.Safe, s.Reason = false, fmt.Sprintf("the system clock was stepped by %v since the last good NTP round", step)
	case now.Sub(c.lastGood) > c.cfg.MaxSilence:
		s.Safe, s.Reason = false, fmt.Sprintf("no good NTP answer for %v (limit %v)", now.Sub(c.lastGood).Round(time.Second), c.cfg.MaxSilence)
	}
	return s
}

// Safe reports whether the clock can vouch for its error bound.
func (c *Clock) Safe() bool { return c.Status().Safe }

// Phase returns where node stands in cl now, by the corrected clock.
func (c *Clock) Phase(cl Cluster, node int) Phase {
	safe := c.Safe()
	p := cl.At(c.Now(), node, c.cfg.Guard)
	p.Safe = safe
	p.MayStart = safe && !p.InGuard
	return p
}
