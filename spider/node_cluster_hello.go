package spider

// Hellos (spider/cluster/control.go): each node sends every peer its
// cluster block at start, answers a peer's with its own, and sends it
// again every HelloEvery (helloLoop). Besides the
// block they say the sender's communicator epoch (a stale hello is
// ignored), whether its data directory is new (a peer that lost its
// directory) and its phase clock (a clock too far ahead).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
)

// helloMsg is this node's hello, asking for the peer's if want.
func (c *nodeCluster) helloMsg(want bool) []byte {
	return cluster.EncodeHello(cluster.Hello{Want: want, Fields: c.fields, Epoch: c.ep.Epoch(),
		Fresh: c.n.freshDir, Sent: c.clockNow(), Over: c.settled()}, nonce())
}

// clockMismatch starts the mismatch line of a peer whose clock is ahead.
const clockMismatch = "clock: "

// hello takes peer from's hello (writer only).
func (c *nodeCluster) hello(from int, it communicator.Item) {
	h, err := cluster.DecodeHello(it.URL)
	if err != nil {
		c.badControl.Add(1)
		return
	}
	cur := c.peerEpoch(from)
	if h.Epoch != 0 && h.Epoch < cur {
		// Written before the peer's restart and sent again from its
		// spill file: its block, directory or clock may have changed.
		return
	}
	c.lostDir(from, h.Fresh, cur)
	c.helloSaid(from, h.Over) // node_cluster_late.go
	block := cluster.Diff(c.fields, h.Fields)
	diff := block
	clock := c.clockCheck(from, h)
	if clock != "" {
		diff = append(slices.Clip(block), clock)
	}
	c.mismatchMu.Lock()
	old := c.mismatch[from]
	if len(diff) > 0 {
		c.mismatch[from] = diff
	} else {
		delete(c.mismatch, from)
	}
	refuse := len(c.mismatch) > 0
	c.mismatchMu.Unlock()
	ph := c.hold(from)
	recorded := ph.recorded
	if taken := ph.hello(cluster.OwnersDiffer(c.fields, h.Fields)); taken > 0 || recorded > 0 {
		c.takenUnheard(from, taken)
	}
	// Hellos come again every HelloEvery: what they say is logged when it
	// changes.
	oldBlock, wasAhead := old, len(old) > 0 && strings.HasPrefix(old[len(old)-1], clockMismatch)
	if wasAhead {
		oldBlock = old[:len(old)-1]
	}
	switch {
	case clock != "" && !wasAhead:
		c.n.cfg.Logf("cluster: node %d: %s; fetching nothing", from, strings.TrimPrefix(clock, clockMismatch))
	case clock == "" && wasAhead:
		c.n.cfg.Logf("cluster: node %d's phase clock is within the guard of ours again", from)
	}
	if len(block) > 0 && !slices.Equal(block, oldBlock) {
		c.n.cfg.Logf("cluster: node %d's cluster block differs from ours; fetching nothing: %v", from, block)
	}
	c.refuse.Store(refuse)
	if h.Want {
		c.sendControl(from, cluster.TagHello, c.helloMsg(false))
	}
}

// clockCheck compares peer from's hello's clock with ours (writer only):
// the mismatch line when it is ahead beyond the guard, else "". Hellos
// may arrive out of order (the communicator keeps none), so one that
// agrees clears a clock seen ahead only if it was written after that was
// seen: one written before, while the clocks agreed, is stamped at most
// the guard after our clock's time then (clockAhead).
func (c *nodeCluster) clockCheck(from int, h cluster.Hello) string {
	now := c.clockNow()
	if now.IsZero() {
		return ""
	}
	if ahead := cluster.ClockAhead(h, now); ahead > 0 {
		c.clockAhead[from] = clockSeen{at: now, line: fmt.Sprintf("%sits phase clock is at least %v ahead of ours, beyond the guard of %v (both may fetch from one host in one slot); set both clocks right (ntp_servers, chrony): fetching resumes at its next hello once they agree",
			clockMismatch, ahead.Round(time.Millisecond), cluster.Guard)}
		return c.clockAhead[from].line
	}
	seen, was := c.clockAhead[from]
	if was && !h.Sent.After(seen.at.Add(cluster.Guard)) {
		return seen.line // an older hello than the one that showed it
	}
	delete(c.clockAhead, from)
	return ""
}

// clockSeen is a peer's clock seen ahead: when by our clock, and what
// was said.
type clockSeen struct {
	at   time.Time
	line string
}

// helloLoop sends every peer not down this node's hello again every
// HelloEvery until ctx ends or the crawl does: clocks are compared in hellos only (the
// receiver's clock against the sender's stamp), and one stepped or
// drifting since the start (no ntp_servers, a date set by hand, a virtual
// machine resumed) would otherwise be seen only at a restart, the nodes
// fetching from one host at once meanwhile. A peer that is down gets
// none: they would only pile up in its spill file.
//
// A peer not yet heard from in this run is asked for its hello (Want):
// its hello may have been lost on the wire behind URLs this node holds
// until it comes (peerHold), and then nothing sends it again. Held, the
// URLs are not acknowledged, nor anything after them, so the peer's
// communicator takes this node for stalled and sends again only its
// oldest batch, a held one, as a probe; after DownAfter it sees this
// node down, and its own helloLoop skips it. The crawl could never end.
// (A hello sent to this node's run before a restart is not that case
// any more: the peer sends every batch in flight again once it hears
// the new epoch, the hello with them.)
func (c *nodeCluster) helloLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.HelloEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.over.Load() {
			return
		}
		// None after node 0's "finished" (under detMu, which stateOf
		// holds while it sends it): node 0 tells a peer that took the
		// end and was killed before its bye by everything sent to it
		// acknowledged (checkByes), and a hello that peer never
		// acknowledged had it named as one that missed the end.
		c.detMu.Lock()
		if c.finished == 0 {
			for _, p := range c.ep.Stats().Peers {
				if !p.Down && int(p.ID) != c.self {
					c.sendControl(int(p.ID), cluster.TagHello, c.helloMsg(!c.heardThisRun(int(p.ID))))
				}
			}
		}
		c.detMu.Unlock()
	}
}

// heardThisRun reports whether a hello of peer id was taken in this run.
func (c *nodeCluster) heardThisRun(id int) bool {
	c.late.mu.Lock()
	defer c.late.mu.Unlock()
	_, heard := c.late.heardAt[id]
	return heard
}

// unheardHoldMax bounds the batches of URLs held from a peer not yet
// heard from in this run. Its hello leaves ahead of the URLs it has queued
// or spilled for this node (control items go first), but not ahead of
// the batches in flight when it is queued: up to the sender's window
// (512), sent to this node's previous run and sent again all at once when
// the peer hears of the restart. While they fill the window the hello
// cannot leave at all, so the hold must end before a window's worth, or
// neither side moves; a hello lost is asked for again (helloLoop).
const unheardHoldMax = 64

// peerHold is whether URLs from a peer are acknowledged. They are not
// while its hello of this run says its block gives URLs other owners
// (another partition or node count, cluster.OwnersDiffer), nor before its
// first hello (up to unheardHoldMax batches): such a URL is dropped as not
// ours, or admitted into a directory the operator replaces once the
// configs agree (its IDENTITY changes), and acknowledged it would be lost
// on both sides. Held, it waits in the peer's spill file and comes again
// to the node restarted right.
type peerHold struct {
	heard, differs bool
	first          uint64 // the first delivery held; 0: none
	n              int    // URL batches held before the first hello
	// URLs received before the first hello, and whether they were
	// acknowledged past unheardHoldMax: if its hello then says its block
	// gives other owners, they are the loss the hold is there to prevent.
	early    uint64
	released bool
	recorded uint64 // early as DIR/CLUSTER holds it (recordUnheard)
}

func (c *nodeCluster) hold(peer int) *peerHold {
	h := c.holds[peer]
	if h == nil {
		h = &peerHold{}
		c.holds[peer] = h
	}
	return h
}

// urls notes delivery n, of k URLs.
func (h *peerHold) urls(n uint64, k int) {
	if !h.heard {
		h.early += uint64(k)
	}
	switch {
	case h.differs:
	case h.heard:
		return
	case h.n >= unheardHoldMax:
		h.first, h.released = 0, true // no hello yet: take them, rather than wait forever
		return
	default:
		h.n++
	}
	if h.first == 0 {
		h.first = n
	}
}

// hello notes the peer's hello (differs: its block gives URLs other
// owners). It returns how many URLs were taken from the peer before its
// first hello that its block gives other owners (0: none).
func (h *peerHold) hello(differs bool) (taken uint64) {
	if !h.heard && differs && h.released {
		taken = h.early
	}
	h.heard, h.differs, h.recorded = true, differs, 0
	if !differs {
		h.first = 0
	}
	return taken
}

// peerEpoch is peer id's communicator epoch as last seen (0: never).
func (c *nodeCluster) peerEpoch(id int) uint64 {
	for _, p := range c.ep.Stats().Peers {
		if int(p.ID) == id {
			return p.Epoch
		}
	}
	return 0
}

// clockNow is the time by the phase clock, which hellos carry and are
// compared with: the slots follow it, not the system clock, when they
// differ (NTP). Zero while the clock is unsafe: an NTP clock before its
// first good round is the system clock as is, however far off, and
// compared it would stop fetches until a restart.
func (c *nodeCluster) clockNow() time.Time {
	if g, ok := c.n.cfg.Scheduler.Clock.(gate); ok {
		if p := g.inner.Phase(); p.Safe {
			return p.Now
		}
	}
	return time.Time{}
}

// lostDir notes a hello from peer from under its epoch now (writer
// only): a peer heard from before, under an earlier epoch, whose
// directory is fresh now lost the one it had, and with it the URLs it
// held: those its peers sent it and it acknowledged, and what its pages
// would have led to. Nothing sends them again; they are crawled only if
// found again.
//
// The epoch goes to DIR/CLUSTER with the loss, in one write, before the
// loss is shown: a stop between the two steps must not leave the epoch
// known and the loss not (node_cluster_record.go).
func (c *nodeCluster) lostDir(from int, fresh bool, now uint64) {
	was := c.heard[from]
	if now == 0 || now == was {
		return
	}
	c.heard[from] = now
	lost := fresh && was != 0
	c.updateRecord(func(r *clusterRecord) { // node_cluster_record.go
		r.heard[from] = now
		if lost {
			r.lostDirs[from] = true
		}
	})
	if !lost {
		return
	}
	msg := lostDirMsg(from)
	c.mismatchMu.Lock()
	c.lost[from] = msg
	c.mismatchMu.Unlock()
	c.n.cfg.Logf("cluster: %s", msg)
}

// takenUnheard notes that k URLs from peer from were acknowledged before
// its first hello (more than unheardHoldMax batches of them waited for
// it), and its hello says its block gives URLs other owners (writer
// only): those not ours by our block were dropped, the others admitted
// into a directory that is replaced if ours is the block changed. They
// are not sent again. With k 0 (its block gives them the same owners) it
// only clears the record's count of URLs taken before its hello.
func (c *nodeCluster) takenUnheard(from int, k uint64) {
	// In all: it may do so again in a later run.
	r := c.updateRecord(func(r *clusterRecord) {
		delete(r.unheard, from)
		r.taken[from] += k
		if r.taken[from] == 0 {
			delete(r.taken, from)
		}
	})
	if k == 0 {
		return
	}
	msg := takenMsg(from, r.taken[from])
	c.mismatchMu.Lock()
	c.taken[from] = msg
	c.mismatchMu.Unlock()
	c.n.cfg.Logf("cluster: %s", takenMsg(from, k))
}
