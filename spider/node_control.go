package spider

// Steering a running node (the status server's /control/, kspider ctl):
//
//   - Pause cuts the lists out (their unsent URLs go back to the scheduler
//     as NotTried, as on a stop) and hands out no new list until Resume;
//     pages already received are stored as usual.
//   - Drain hands out no new list, lets the lists out finish, and then Run
//     returns ErrDrained with everything stored and synced; opening the
//     directory again continues the crawl. Drain while paused ends at once.
//   - Set changes the politeness delay ("delay", a duration) or the number
//     of lists fetched at once ("fetchers", 1 up to the collector's
//     configured Fetchers, which sizes its pool) from the next list on.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kspider/kspider/collector"
)

// ErrDrained is what Run returns after a Drain: the lists out finished,
// everything fetched is stored and synced, and the crawl is not done.
var ErrDrained = errors.New("spider: crawl drained")

// control is the node's pause, drain and fetcher-limit state; its zero
// value is a running node with the configured limits.
type control struct {
	mu       sync.Mutex
	cond     *sync.Cond
	paused   bool
	draining bool
	since    time.Time       // when the pause began
	pausedD  time.Duration   // paused time before since
	runCtx   context.Context // Run's, plus StopGrace; the lists' contexts derive from it
	listCtx  context.Context
	stopping <-chan struct{} // closed at a stop: lists send no more requests (collector.List.Stop)
	cutLists context.CancelFunc
	endNext  context.CancelFunc // Run's: stops handing out lists
	limit    int                // lists at once; 0 = the configured fetchers
	busy     int
}

func (c *control) init() {
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
}

// maxFetchers is the configured number of lists fetched at once.
func (n *Node) maxFetchers() int {
	if f := n.cfg.Collector.Fetchers; f > 0 {
		return f
	}
	return collector.DefaultFetchers
}

// startControl is called by Run before it hands out lists.
func (n *Node) startControl(runCtx, nextCtx context.Context, endNext context.CancelFunc) {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	// The lists' contexts outlive Run's by StopGrace: a stop hands out no
	// new list at once (nextCtx) but lets the responses asked for arrive.
	graceCtx, cutAll := context.WithCancel(context.WithoutCancel(runCtx))
	context.AfterFunc(runCtx, func() { time.AfterFunc(n.cfg.StopGrace, cutAll) })
	c.endNext, c.runCtx, c.stopping = endNext, graceCtx, runCtx.Done()
	c.listCtx, c.cutLists = context.WithCancel(graceCtx)
	if c.paused {
		c.cutLists()
	}
	if c.draining {
		endNext()
	}
	context.AfterFunc(nextCtx, func() { // wake a wait for resume or a fetcher
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
}

// acquire waits until the node is not paused and a fetcher is free, and
// returns the context the list runs under; ok is false when the crawl
// stops handing out lists (ctx ended, drain).
func (n *Node) acquire(ctx context.Context) (context.Context, bool) {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if ctx.Err() != nil || c.draining {
			return nil, false
		}
		limit := c.limit
		if limit <= 0 {
			limit = n.maxFetchers()
		}
		if !c.paused && c.busy < limit {
			c.busy++
			return c.listCtx, true
		}
		c.cond.Wait()
	}
}

func (n *Node) release() {
	c := &n.ctl
	c.mu.Lock()
	c.busy--
	c.cond.Broadcast()
	c.mu.Unlock()
}

// Pause cuts the lists out and hands out none until Resume.
func (n *Node) Pause() {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.paused {
		return
	}
	c.paused, c.since = true, time.Now()
	if c.cutLists != nil {
		c.cutLists()
	}
	n.cfg.Logf("paused")
}

// Resume undoes Pause.
func (n *Node) Resume() {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if !c.paused {
		return
	}
	c.paused = false
	c.pausedD += time.Since(c.since)
	if c.runCtx != nil { // Run has started: a fresh context for new lists
		c.listCtx, c.cutLists = context.WithCancel(c.runCtx)
	}
	c.cond.Broadcast()
	n.cfg.Logf("resumed")
}

// Drain hands out no new list; Run returns ErrDrained once the lists out
// are done and everything is synced.
func (n *Node) Drain() {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	c.draining = true
	if c.endNext != nil {
		c.endNext()
	}
	c.cond.Broadcast()
	n.cfg.Logf("draining")
}

// Setting is one KEY=VALUE of Set.
type Setting struct{ Key, Value string }

// Set changes settings of the running node: "delay" (politeness delay
// after each list, a duration such as "250ms") or "fetchers" (lists at
// once, 1 up to the configured number). All are checked before any is
// applied, so a request with one bad setting changes nothing: the caller
// is told it failed and must not be left guessing which half took. A key
// given twice takes its last value.
func (n *Node) Set(settings ...Setting) error {
	delay, fetchers := time.Duration(-1), 0
	for _, s := range settings {
		switch s.Key {
		case "delay":
			d, err := time.ParseDuration(s.Value)
			if err != nil || d < 0 || d > maxPoliteDelay {
				return fmt.Errorf("delay: want a duration from 0s to %v, like 250ms, not %q", Duration{maxPoliteDelay}, s.Value)
			}
			delay = d
		case "fetchers":
			f, err := strconv.Atoi(s.Value)
			if err != nil || f < 1 || f > n.maxFetchers() {
				return fmt.Errorf("fetchers: want 1 to %d (the configured fetchers), not %q", n.maxFetchers(), s.Value)
			}
			fetchers = f
		default:
			return fmt.Errorf("unknown setting %q (delay, fetchers)", s.Key)
		}
	}
	if delay >= 0 { // first: the one that can fail
		if err := n.sched.SetMinDelay(delay); err != nil {
			return err
		}
	}
	if fetchers > 0 {
		c := &n.ctl
		c.mu.Lock()
		c.init()
		c.limit = fetchers
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return nil
}

// runState is the state of a running node.
func (n *Node) runState() string {
	c := &n.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.draining:
		return "draining"
	case c.paused:
		return "paused"
	}
	return "running"
}

// fetcherStatus is how busy the fetchers are.
func (n *Node) fetcherStatus() FetcherStatus {
	c := &n.ctl
	c.mu.Lock()
	limit, paused := c.limit, c.pausedD
	if c.paused {
		paused += time.Since(c.since)
	}
	c.mu.Unlock()
	if limit <= 0 {
		limit = n.maxFetchers()
	}
	return FetcherStatus{Busy: int(n.inflight.Load()), Max: limit, DelaySecs: n.sched.MinDelay().Seconds(), PausedSecs: paused.Seconds()}
}

func (n *Node) draining() bool {
	n.ctl.mu.Lock()
	defer n.ctl.mu.Unlock()
	return n.ctl.draining
}
