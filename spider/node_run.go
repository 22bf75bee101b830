package spider

// The node's run loop: lists handed out by the scheduler, each processed
// by a goroutine of its own, until nothing is left, the context ends or a
// fatal error (the node's opening and its durability order: node.go).
//
// # Stop and resume
//
// Cancelling Run's context stops handing out lists; lists out send no
// further request (collector.List.Stop), read the responses they asked for
// within NodeConfig.StopGrace, and are then cut (the collector returns the URLs
// it did not send as NotTried, reported back as such), every page fetched
// is stored, and the tree, scheduler and store are
// synced and closed. Opening the same directory again continues: the
// scheduler turns in-progress URLs back to in-list. The data directory is
// locked with LockDir for the node's lifetime.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// NodeSummary is what a node's Run did.
type NodeSummary struct {
	Fetched uint64 // responses received
	Stored  uint64 // pages handed to the store
	Bytes   uint64 // body bytes stored
	Errors  uint64 // failed fetches
	Denied  uint64 // URLs robots.txt forbade
	// DeniedOverBudget: of Denied, the URLs a hostile robots.txt's
	// patterns made too costly to check (robots.Rules.CheckURL), denied
	// by no rule.
	DeniedOverBudget uint64
	// RobotsAbandoned: robots.txt fetches sent and cut short because their
	// list's context ended (a slot's cutoff, the crawl stopping), nothing
	// cached: each is fetched again at its origin's next list. One the end
	// kept from being sent is not counted.
	RobotsAbandoned uint64
	TooDeep         uint64 // link sightings beyond the depth limit
	Rejected        uint64 // link sightings the scope filters refused
	Admitted        uint64 // new URLs added (seeds included)
	// Unreadable: stored pages whose links had to be read back (found
	// shallower, or a pass for a raised depth limit or a changed scope)
	// and could not be: damaged records, which kspider check reports.
	Unreadable uint64
	URLs       int  // URLs in the tree
	Finished   bool // nothing left to fetch (within MaxPages)
	// LimitReached: MaxPages pages are fetched; the URLs left wait for a
	// larger limit.
	LimitReached bool
	Elapsed      time.Duration
}

// Durable is how many of the pages this run handed to the store
// (NodeSummary.Stored) the store has made durable; final once Close
// returned. It is below Stored only when the store failed: the others
// were lost with it, and the next run fetches them again (their URLs were
// never reported fetched).
func (n *Node) Durable() uint64 { return n.st.durable.Load() }

// DurableBytes is the body bytes of the Durable pages: NodeSummary.Bytes
// counts those handed to the store, lost ones too.
func (n *Node) DurableBytes() uint64 { return n.st.durableBytes.Load() }

// Counters is a snapshot for the progress line: the part of Status it
// shows (one source of truth).
func (n *Node) Counters() Counters { return n.status(false).Counters() }

// fail records the first fatal error and stops the crawl.
func (n *Node) fail(err error) {
	n.errMu.Lock()
	if n.err == nil {
		n.err = err
		if n.stop != nil {
			n.stop()
		}
	}
	n.errMu.Unlock()
}

func (n *Node) firstErr() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.err
}

func (n *Node) poke() {
	select {
	case n.idle <- struct{}{}:
	default:
	}
}

func (n *Node) done() bool {
	return (n.unfinished.Load() <= 0 || n.pagesExhausted()) && n.pending.Load() == 0 && n.inflight.Load() == 0
}

// ErrInterrupted is what Run returns when its context ended before the
// crawl did; everything fetched is stored all the same.
var ErrInterrupted = errors.New("spider: crawl interrupted")

// Run crawls until nothing is left to fetch, ctx ends (ErrInterrupted) or a
// fatal error. Either way everything fetched is stored and synced before it
// returns. Call it once.
func (n *Node) Run(ctx context.Context) (*NodeSummary, error) {
	start := time.Now()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	n.errMu.Lock()
	n.stop = stop
	n.errMu.Unlock()
	n.ss.begin()
	defer n.ss.stopped.Store(true)
	go n.sampleLoop(runCtx)

	msgs := make(chan found, 256)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		n.writer(msgs)
	}()
	raised := make(chan struct{})
	if n.raiseFrom >= 0 || n.scopeChanged {
		n.pending.Add(1)
		done := make(chan struct{})
		msgs <- found{raise: runCtx, done: done}
		go func() {
			defer close(raised)
			n.recordRaise(done)
		}()
	} else {
		close(raised)
	}
	if len(n.cfg.Seeds) > 0 {
		n.pending.Add(1)
		msgs <- found{seeds: n.cfg.Seeds}
	}

	// nextCtx ends when the crawl is done or stopped.
	nextCtx, endNext := context.WithCancel(runCtx)
	go func() {
		wasDone := false
		for {
			done := n.done()
			if done && n.clusterOver() {
				endNext()
				return
			}
			if done && n.cl.lookAgain(!wasDone) {
				n.cl.idleNow(nextCtx) // node_cluster_end.go
			}
			wasDone = done
			select {
			case <-n.idle:
			case <-nextCtx.Done():
				return
			}
		}
	}()
	n.startControl(runCtx, nextCtx, endNext) // pause, drain, fetchers: node_control.go
	if n.cl != nil {
		n.cl.startLoops(nextCtx) // node_cluster_end.go
		go n.cl.coordinate(nextCtx)
	}
	var lists sync.WaitGroup
	for {
		listCtx, ok := n.acquire(nextCtx)
		if !ok {
			break
		}
		l, err := n.sched.Next(nextCtx)
		if err != nil {
			n.release()
			if nextCtx.Err() == nil {
				n.fail(fmt.Errorf("spider: scheduler: %w", err))
			}
			break
		}
		n.inflight.Add(1)
		lists.Add(1)
		go func() {
			defer func() {
				n.inflight.Add(-1) // before release: busy never reads above the fetchers
				n.release()
				lists.Done()
				n.poke()
			}()
			n.processList(listCtx, l, msgs)
		}()
	}
	endNext()
	lists.Wait()
	n.coll.CloseIdle() // node_keep.go
	close(msgs)
	<-writerDone
	<-raised
	sum := &NodeSummary{Fetched: n.st.fetched.Load(), Stored: n.st.pages.Load(), Bytes: n.st.bytes.Load(),
		Errors: n.st.errors.Load(), Denied: n.st.denied.Load(), DeniedOverBudget: n.st.deniedOverBudget.Load(),
		RobotsAbandoned: uint64(max(n.robots.src.Abandoned(), 0)), TooDeep: n.st.tooDeep.Load(),
		Rejected: n.st.rejected.Load(), Admitted: n.st.admitted.Load(), Unreadable: n.st.unreadable.Load(), URLs: n.tree.Len(), Elapsed: time.Since(start)}
	if err := n.firstErr(); err != nil {
		return sum, err
	}
	if ctx.Err() != nil && (!(n.done() && n.clusterOver()) || n.raiseCut.Load()) {
		return sum, ErrInterrupted // (a pass cut short: what it would add is not queued yet)
	}
	if n.draining() && (!n.done() || n.raiseCut.Load()) {
		return sum, ErrDrained // (a pass cut short: the next run makes it)
	}
	sum.Finished = true
	sum.LimitReached = n.pagesExhausted() && n.unfinished.Load() > 0
	return sum, nil
}
