package resolver

import (
	"sync"
	"sync/atomic"
	"time"
)

// coarseTick is the resolution of the default clock. TTLs are whole seconds,
// so an entry living up to one tick longer does not matter, while reading
// the system clock on every cache hit would cost about a third of the hit.
const coarseTick = 50 * time.Millisecond

// coarseIdle is how many ticks in a row without a read park the clock.
// A crawler looks up a host per list, some ten times a second per node:
// ticking on for that woke an otherwise idle node twenty times a second,
// each wake-up some 200 µs of CPU on a VM (the timer's thread, the
// runtime's sysmon, the scheduler), for reads that a parked clock answers
// from the system clock (tens of ns more each).
const coarseIdle = 2

// coarseBurst is how many reads within one tick restart a parked clock:
// at such rates (a loaded resolver, its benchmark) a read costs two atomic
// loads again instead of the system clock.
const coarseBurst = 16

// coarse clock states: read since the last tick; parked (not ticking).
const (
	coarseRead   = 1
	coarseParked = 2
)

// coarseClock is the time in Unix nanoseconds, refreshed every coarseTick
// by a goroutine while it is read often, read with two atomic loads.
// Parked, a read takes the system clock and counts itself in the current
// tick-long window (window, reads); a burst restarts the ticker.
//
// It is the wall clock at its start plus the monotonic time since: read
// from the wall clock, a step of the system clock back (NTP setting right
// a clock that was hours ahead) kept every cache entry, failures too, and
// every server marked down, for as much longer; one forward expired them.
type coarseClock struct {
	start  time.Time // with its monotonic reading
	now    atomic.Int64
	state  atomic.Uint32 // coarseRead, coarseParked or 0
	window atomic.Int64  // parked: start of the window counted in reads (Unix ns)
	reads  atomic.Int64  // parked: reads since window
	wake   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{start: time.Now(), stop: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.now.Store(c.start.UnixNano())
	c.state.Store(coarseRead)
	c.wg.Add(1)
	go c.run()
	return c
}

func (c *coarseClock) run() {
	defer c.wg.Done()
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	idle := 0
	for {
		select {
		case <-t.C:
			c.now.Store(c.system())
			if c.state.CompareAndSwap(coarseRead, 0) {
				idle = 0
				continue
			}
			if idle++; idle < coarseIdle || !c.state.CompareAndSwap(0, coarseParked) {
				continue
			}
			t.Stop()
			select {
			case <-c.wake: // the reader that unparked it stored the time
			case <-c.stop:
				return
			}
			idle = 0
			t.Reset(coarseTick)
		case <-c.stop:
			return
		}
	}
}

// read returns the time in Unix nanoseconds, at most one tick old.
func (c *coarseClock) read() int64 {
	if c.state.Load() == coarseRead {
		return c.now.Load()
	}
	return c.touch()
}

// touch marks the clock read; parked, it returns the system clock and
// restarts the ticker on a burst of reads.
func (c *coarseClock) touch() int64 {
	for {
		switch s := c.state.Load(); s {
		case coarseRead:
			return c.now.Load()
		case 0:
			if c.state.CompareAndSwap(0, coarseRead) {
				return c.now.Load()
			}
		case coarseParked:
			now := c.system()
			if !c.burst(now) {
				return now
			}
			c.now.Store(now) // before the state: readers of coarseRead load it
			if c.state.CompareAndSwap(coarseParked, coarseRead) {
				c.wake <- struct{}{} // room: one parking, one wake
			}
			return now
		}
	}
}

// system reads the system clock: the wall clock at the start plus the
// monotonic time since, in Unix nanoseconds.
func (c *coarseClock) system() int64 { return c.start.UnixNano() + int64(time.Since(c.start)) }

// burst counts a read of the parked clock at now and reports whether
// more than coarseBurst fell within one tick. Racing readers may lose a
// count or restart the window twice: it only decides when to tick again.
func (c *coarseClock) burst(now int64) bool {
	if now-c.window.Load() >= int64(coarseTick) {
		c.window.Store(now)
		c.reads.Store(1)
		return false
	}
	return c.reads.Add(1) > coarseBurst
}

func (c *coarseClock) close() {
	close(c.stop)
	c.wg.Wait()
}
