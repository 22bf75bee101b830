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

// coarseIdle is how many ticks without a read park the clock: a node of a
// cluster waits minutes for its phase without a lookup, and a tick costs
// about as much CPU on a busy machine as a cache miss.
const coarseIdle = 20

// coarse clock states: read since the last tick; parked (not ticking).
const (
	coarseRead   = 1
	coarseParked = 2
)

// coarseClock is the wall clock in Unix nanoseconds, refreshed every
// coarseTick by a goroutine while it is read, read with two atomic loads.
type coarseClock struct {
	now   atomic.Int64
	state atomic.Uint32 // coarseRead, coarseParked or 0
	wake  chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{stop: make(chan struct{}), wake: make(chan struct{}, 1)}
	c.now.Store(time.Now().UnixNano())
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
		case now := <-t.C:
			c.now.Store(now.UnixNano())
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

// touch marks the clock read and restarts it if it was parked.
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
			now := time.Now().UnixNano()
			c.now.Store(now)
			if c.state.CompareAndSwap(coarseParked, coarseRead) {
				c.wake <- struct{}{} // room: one parking, one wake
			}
			return now
		}
	}
}

func (c *coarseClock) close() {
	close(c.stop)
	c.wg.Wait()
}
