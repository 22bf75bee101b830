package spider

import (
	"context"
	"fmt"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
)

// The end of a cluster's crawl (spider/cluster's package doc): node 0
// probes its peers in rounds while it is idle, and the crawl is over when
// two rounds in a row found every node idle with the same generations.
//
// When rounds start is up to the coordinator; the proof needs only that
// a round's probes go out after every answer of the round before. So
// rounds follow events, not a clock: node 0 starts one when it turns idle
// itself, when a peer that answered busy says it is idle now (a state
// message of no open round), and right after a round that found every
// node idle (the confirming one). Only rounds that found a node busy are
// followed by a timer, RoundEvery doubling up to 4 times that, the
// fallback for a node that turned idle unseen. A polled coordinator (every
// 250 ms while idle) kept every node of a long crawl waking for probes, and
// its last two rounds waited for the ticks.

// finish ends this node's part of the crawl.
func (c *nodeCluster) finish() {
	if !c.over.Swap(true) {
		c.n.poke()
	}
}

// byeWait bounds the coordinator's wait for its peers' byes after
// "finished": a peer down or paused then may never answer.
const byeWait = 10 * time.Second

// checkByes ends the coordinator once every peer said bye, or byeWait
// after it sent "finished". A peer that missed it learns the end at its
// next start only from a peer started with it that knows
// (node_cluster_late.go): if it still runs (paused), or is restarted
// alone, it waits for peers that are gone, so the coordinator names it
// (ClusterStats.NoBye) for the operator to stop it. Its share is done:
// it answered idle in the last two rounds.
//
// A peer acknowledges "finished" only once it recorded the end
// (finishedBy), and its bye follows: one seen, at a look after
// "finished", with everything sent to it acknowledged but no bye took
// the end and stopped before the bye left (killed), or its bye is lost.
// Named as one that missed the end, the operator went looking for a node
// left waiting that had ended. The looks come with every answer and bye,
// at least every 4 RoundEvery and at the deadline (coordinate): not only
// at the deadline, when a message sent since (an answer to the peer's
// hello; helloLoop sends none after "finished") may wait for an
// acknowledgement a stopped peer never gives.
func (c *nodeCluster) checkByes() {
	c.detMu.Lock()
	if c.finished > 0 && c.noBye == nil {
		for id := range c.cfg.Config.Members {
			if id != c.self && !c.byes[id] && !c.tookEnd[id] && c.ep.Backlog(communicator.NodeID(id)) == 0 {
				c.tookEnd[id] = true
			}
		}
	}
	done := c.finished > 0 && (len(c.byes) >= c.cfg.Config.N()-1 || time.Since(c.finAt) > byeWait)
	var silent []silentPeer
	if done && c.noBye == nil {
		silent = []silentPeer{}
		for id := range c.cfg.Config.Members {
			if id != c.self && !c.byes[id] {
				silent = append(silent, silentPeer{id, c.tookEnd[id]})
			}
		}
		c.noBye = silent
	}
	c.detMu.Unlock()
	for _, p := range silent {
		c.n.cfg.Logf("cluster: %s", p.msg())
	}
	if done {
		c.finish()
	}
}

// silentPeer is a peer that said no bye within byeWait; took: it
// acknowledged "finished", so recorded the end.
type silentPeer struct {
	id   int
	took bool
}

// msg says the peer did not answer "finished", and what the operator
// should check.
func (p silentPeer) msg() string {
	if p.took {
		return fmt.Sprintf("node %d took the end of the crawl (it acknowledged it) but sent no bye within %v (stopped before its bye, killed, or the bye lost; its share is crawled): check that it has exited; if it runs on, stop it", p.id, byeWait)
	}
	return fmt.Sprintf("node %d did not answer the end of the crawl within %v (down or paused; its share is crawled): if it runs on, it waits for peers that are gone: stop it", p.id, byeWait)
}

// state is this node's answer to a probe: idle when nothing is left to
// fetch or admit and every item it sent was acknowledged.
func (c *nodeCluster) state() cluster.State {
	// A node whose config differs from a peer's is never idle: the crawl
	// cannot end until the operator fixes the config.
	idle := c.n.done() && !c.refuse.Load()
	// Batches received but not yet taken by the writer (a peer's URLs, its
	// hello with a config that may differ) are work too.
	c.mu.Lock()
	if len(c.inbox) > 0 {
		idle = false
	}
	c.mu.Unlock()
	if c.backlogged() {
		idle = false
	}
	return cluster.State{Idle: idle, Gen: c.gen.Load(), Epoch: c.ep.Epoch()}
}

// backlogged reports whether some item this node sent is not yet
// acknowledged.
func (c *nodeCluster) backlogged() bool {
	for id := range c.cfg.Config.Members {
		if id != c.self && c.ep.Backlog(communicator.NodeID(id)) > 0 {
			return true
		}
	}
	return false
}

// startLoops starts the DNS prefetch, the hellos sent again and the
// watch for an end before this run, until ctx ends. Run calls it itself,
// not from coordinate's goroutine: a run that ended at once (nothing to
// do) had Close wait for the loops while that goroutine, not yet
// scheduled, still added them (a data race on the WaitGroup, and loops
// started after the wait).
func (c *nodeCluster) startLoops(ctx context.Context) {
	if g, ok := c.n.cfg.Scheduler.Clock.(gate); ok {
		c.loops.Go(func() { c.prefetchLoop(ctx, g.inner) })
	}
	c.loops.Go(func() { c.helloLoop(ctx) })
	c.loops.Go(func() { c.lateLoop(ctx) }) // node_cluster_late.go
	c.late.running.Store(true)
}

// coordinate runs on node 0: it probes its peers, one round at a time,
// when it is idle and a round is due (see above).
func (c *nodeCluster) coordinate(ctx context.Context) {
	if c.det == nil {
		return
	}
	c.detMu.Lock()
	c.roundWait = c.cfg.RoundEvery
	c.detMu.Unlock()
	t := time.NewTimer(c.cfg.RoundEvery)
	defer t.Stop()
	for {
		kicked := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
			kicked = true
		}
		c.checkByes()
		if c.over.Load() {
			return
		}
		if c.cfg.Config.N() == 1 { // alone: nobody to ask
			if c.state().Idle {
				c.finish()
				return
			}
			t.Reset(c.cfg.RoundEvery)
			continue
		}
		c.detMu.Lock()
		wait := c.roundWait
		switch due := c.roundEnd.Add(c.roundWait); {
		case c.finished > 0 || c.det.Open():
			// Answers and byes wake it; the timer only minds the byes'
			// deadline, byeWait, and peers restarted since the probes
			// (and idles while a peer is down).
			c.restartedUnanswered()
			wait = 4 * c.cfg.RoundEvery
			if c.finished > 0 {
				// The deadline at its own time: at the next look only,
				// node 0 ended up to 4 RoundEvery after it (a minute's
				// RoundEvery, 4 minutes late).
				wait = min(wait, time.Until(c.finAt.Add(byeWait))+time.Millisecond)
			}
		case !kicked && time.Now().Before(due):
			wait = time.Until(due) // woken early: the last round found a node busy
		default:
			if st := c.state(); st.Idle {
				r := c.det.Start(st)
				c.probed = map[int]uint64{}
				for _, p := range c.ep.Stats().Peers {
					c.probed[int(p.ID)] = p.Epoch
				}
				for id := range c.cfg.Config.Members {
					if id != c.self {
						c.sendControl(id, cluster.TagProbe, cluster.EncodeProbe(r, c.ep.Epoch()))
					}
				}
				wait = c.cfg.RoundEvery
			} else if c.n.done() && c.backlogged() {
				// Idle but for acknowledgements (of its last probes, say):
				// it kicks once they came.
				c.awaitAcks(ctx.Done())
			} else {
				c.backOff()
				wait = c.roundWait
				if !c.refuse.Load() {
					// Busy itself: it kicks when it turns done (idleNow).
					// Owed, and the watcher poked after: it looks only
					// when poked, and one that saw the node done before
					// and after a busy moment would never kick. (A node
					// refusing waits for the hello that ends it, or the
					// timer: kicked at once, it would spin.)
					c.owed.Store(true)
					c.n.poke()
				}
			}
		}
		c.detMu.Unlock()
		t.Reset(wait)
	}
}

// restartedUnanswered takes the answer to the open round of each peer
// restarted since its probe left as busy (detMu held). The peer
// acknowledges a probe once its answer is queued, and the answer, a
// control message, waits in the communicator's memory until node 0
// acknowledges it: only a clean stop (Close) writes it to the spill
// file. Killed (kill -9) after the acknowledgement, with the answer lost
// on the wire, neither it nor its next run (which never had the probe)
// ever answered, and the round, and the crawl, waited for ever. An answer
// of its run before that does come (a clean stop: sent again from its
// spill file) is busy too (stale): either way the next round starts at
// once and probes the new run. Nothing else takes the acknowledgement
// of a probe for a durable answer.
func (c *nodeCluster) restartedUnanswered() {
	if !c.det.Open() {
		return
	}
	r := c.det.Round()
	for _, p := range c.ep.Stats().Peers {
		if id := int(p.ID); id != c.self && p.Epoch > c.probed[id] {
			c.probed[id] = p.Epoch
			if complete, _, _ := c.det.Reply(id, r, cluster.State{}); complete {
				c.staleRound = r
				c.roundWait = c.cfg.RoundEvery
				c.kickRound()
			}
		}
	}
}

// finishedBy takes node 0's "finished" (writer only). One of its run
// before a restart comes again from its spill file (not acknowledged when
// it stopped), and ended a node started since at once, whatever work its
// run had: it is ignored, counted and said. Such a node learns an end
// before its run from node 0's hellos (node_cluster_late.go).
func (c *nodeCluster) finishedBy(from int, it communicator.Item) {
	r, epoch, err := cluster.DecodeFinished(it.URL)
	if err != nil || from != 0 {
		c.badControl.Add(1)
		return
	}
	if epoch == 0 || epoch < c.peerEpoch(from) {
		c.staleSeen(from, &c.stale.finished, fmt.Sprintf("node 0's \"finished\" (round %d) of its run before a restart ignored: that run's end is not this one's", r))
		return
	}
	c.updateRecord(func(r *clusterRecord) { r.over = true }) // node_cluster_late.go
	c.sendControl(from, cluster.TagBye, cluster.EncodeBye(r, epoch))
	c.finish()
}

// byeFrom takes a peer's bye (node 0, writer only). One answering a
// "finished" of node 0's run before (of a crawl resumed since: the peer
// stopped before node 0 acknowledged it) comes again from the peer's
// spill file, and once this run's rounds reached the same number it was
// taken for the peer's answer to this run's "finished": node 0 ended
// without it, and would not name the peer had it missed the end. It is
// ignored, counted and said.
func (c *nodeCluster) byeFrom(from int, it communicator.Item) {
	r, epoch, err := cluster.DecodeBye(it.URL)
	if err != nil || c.det == nil {
		c.badControl.Add(1)
		return
	}
	if epoch != c.ep.Epoch() {
		c.staleSeen(from, &c.stale.bye, fmt.Sprintf("node %d's bye (round %d) to a \"finished\" of this node's run before ignored: it answers no end of this run", from, r))
		return
	}
	c.detMu.Lock()
	if r == c.finished {
		c.byes[from] = true
	}
	c.detMu.Unlock()
	c.checkByes()
}

// kickRound has the coordinator start a round now if it can.
func (c *nodeCluster) kickRound() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// backOff doubles the wait before the coordinator's next round, up to 4
// times RoundEvery (detMu held).
func (c *nodeCluster) backOff() {
	c.roundWait = min(2*c.roundWait, 4*c.cfg.RoundEvery)
}

// answerProbe answers node 0's probe of round r and epoch with this
// node's state, and remembers to tell node 0 when it turns idle if it
// answered busy. The state echoes the epoch: node 0 ignores an answer to
// a probe of its run before a restart (a probe sent again from its spill
// file, or the answer from this node's). The answer is only queued, in
// memory, when the probe is acknowledged: a kill loses it, and node 0
// takes a peer restarted since its probe as busy (restartedUnanswered).
//
// That order is safe, for no answer needs to outlive the run that gave
// it. While the run lives its communicator sends the answer until node 0
// acknowledges it. A clean stop spills it, and the next run's sending it
// again is a stale state, busy. A kill loses it, and node 0 then hears
// the peer's new epoch, takes the round's answer as busy and probes the
// new run; a run that is never heard from again is down, and the crawl
// rightly waits. An idle answer claims nothing a crash can undo: every
// item this node sent was acknowledged, so durable at its owner, and the
// items it received that the writer took are acknowledged only once
// synced (syncCluster), so their senders stay busy until then, and a
// kill before has them sent again to the next run. An end needs two
// idle rounds of the same runs (the states' epochs), so a run's answer
// never pairs with its successor's.
func (c *nodeCluster) answerProbe(from int, r, epoch uint64) {
	c.lastProbe.Store(&probeOf{r, epoch})
	c.owed.Store(true) // before the look: an idleNow meanwhile tells (twice at worst)
	st := c.state()
	if st.Idle {
		c.owed.Store(false)
	} else if c.n.done() && c.backlogged() {
		c.awaitAcks(nil) // done already: no turn to come, only acks (or the endpoint's close)
	}
	c.sendControl(from, cluster.TagState, cluster.EncodeState(r, epoch, st))
	if f := c.cfg.onAnswer; f != nil {
		f(r, st)
	}
}

// stateOf takes a peer's state: its answer to the open round, or news
// that it turned idle since it answered busy (of no open round). Stale:
// the state is of its sender's run before a restart, taken as busy.
//
// A round such a state completes busy is followed by the next at once,
// not after the back-off: the sender's new run never had that probe, so
// owes no word when it is idle, and the wait (up to 4 RoundEvery) only
// delayed the end. A peer really busy in that round answers the next busy
// again, and that round backs off.
func (c *nodeCluster) stateOf(from int, r uint64, st cluster.State, stale bool) error {
	c.detMu.Lock()
	defer c.detMu.Unlock()
	news := !c.det.Open() || r != c.det.Round()
	if !news && c.answered[from] != r {
		// A round answered, counted once: news that the peer turned
		// idle, sent unasked, answers no probe, nor does news of the
		// open round (sent before the round's other answers came).
		c.answered[from] = r
		c.countProbe(from) // node_status_cluster.go
	}
	if stale && !news {
		c.staleRound = r
	}
	complete, over, err := c.det.Reply(from, r, st)
	switch {
	case over && c.finished == 0:
		c.updateRecord(func(r *clusterRecord) { r.over = true }) // node_cluster_late.go
		c.finished, c.finAt = r, time.Now()
		for id := range c.cfg.Config.Members {
			if id != c.self {
				c.sendControl(id, cluster.TagFinished, cluster.EncodeFinished(r, c.ep.Epoch()))
			}
		}
		c.n.cfg.Logf("cluster: every node idle in two probe rounds (%d): the crawl is over", r)
		c.kickRound() // to set its timer for the byes' deadline
	case complete && c.det.AllIdle(), news && st.Idle && err == nil, complete && c.staleRound == r:
		c.roundWait = c.cfg.RoundEvery
		c.kickRound()
	case complete:
		c.roundEnd = time.Now()
		c.backOff()
	}
	return err
}

// lookAgain reports whether idleNow should run: when the node turned done
// (turned), after the acknowledgements it waited for came, or while it
// owes node 0 (or itself, on node 0) word that it is idle. The watcher
// sees the node done or not only when poked, so a busy moment between
// two looks (a batch of known URLs) goes unseen, and turned alone left
// such a debt unpaid until the coordinator's fallback timer.
func (c *nodeCluster) lookAgain(turned bool) bool {
	return c.acked.Swap(false) || turned || c.owed.Load()
}

// idleNow is called when the node has just turned done (nothing left to
// fetch or admit): node 0 starts a round, another node that answered the
// last probe busy tells node 0 it is idle now. (Not at every wake-up of a
// done node: node 0 is woken by every answer, and a round that found a
// node busy must not be followed by another at once.) Items it sent that
// are not yet acknowledged keep it busy; one goroutine then waits for the
// acknowledgements and has it look again.
func (c *nodeCluster) idleNow(ctx context.Context) {
	if c.det == nil && !c.owed.Load() {
		return
	}
	if c.backlogged() {
		c.awaitAcks(ctx.Done())
		return
	}
	if c.det != nil {
		c.owed.Store(false)
		c.kickRound()
		return
	}
	// owed is set only by a probe answered (answerProbe), after lastProbe.
	if p := c.lastProbe.Load(); p != nil {
		if p.epoch < c.peerEpoch(0) {
			// Node 0 restarted since its probe: its new run takes a state
			// of its run before's probe for one of then and ignores it
			// (said as such, and counted as this node's stale control),
			// and probes this node itself once idle. owed stays, for its
			// next probe to settle: cleared here it could erase the debt
			// of a busy answer to that probe, given meanwhile.
			return
		}
		if st := c.state(); st.Idle && c.owed.CompareAndSwap(true, false) {
			c.sendControl(0, cluster.TagState, cluster.EncodeState(p.round, p.epoch, st))
		}
	}
}

// awaitAcks starts a goroutine, unless one runs already, that waits until
// every peer acknowledged all this node sent (or stop is closed, or the
// endpoint), then has the node look at its state again.
func (c *nodeCluster) awaitAcks(stop <-chan struct{}) {
	if !c.draining.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.n.poke()
		defer c.draining.Store(false)
		for id := range c.cfg.Config.Members {
			if id != c.self && !c.ep.WaitBacklog(communicator.NodeID(id), 0, stop) {
				return
			}
		}
		c.acked.Store(true)
	}()
}

// probeOf is a probe received: its round and the coordinator's epoch it
// named, which the answer echoes. One value, not two: a state sent unasked
// must not pair one probe's round with another's epoch.
type probeOf struct{ round, epoch uint64 }
