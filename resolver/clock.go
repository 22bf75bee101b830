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

// coarseClock is the wall clock in Unix nanoseconds, refreshed every
// coarseTick by a goroutine, read with one atomic load.
type coarseClock struct {
	now  atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{stop: make(chan struct{})}
	c.now.Store(time.Now().UnixNano())
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(coarseTick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				c.now.Store(now.UnixNano())
			case <-c.stop:
				return
			}
		}
	}()
	return c
}

func (c *coarseClock) close() {
	close(c.stop)
	c.wg.Wait()
}
