package spider

// The cluster's counters (ClusterStats) and its part of a peer's row on
// the status page.

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kspider/kspider/communicator"
)

// ClusterStats is the cluster part of a node's counters.
type ClusterStats struct {
	Self, Nodes       int
	SentURLs          uint64 // links handed to the communicator for their owners
	ReceivedURLs      uint64 // URLs received from peers
	Misrouted         uint64 // URLs received that this node does not own (configs differ)
	BadControl        uint64 // control messages that did not decode, or that their sender may not send (a probe or "finished" but from node 0, a state or bye but to node 0)
	StaleFinished     uint64 // "finished" of node 0's run before its restart, ignored
	StaleBye          uint64 // node 0: a bye answering a "finished" of its run before, ignored
	StaleState        uint64 // node 0: a state of a probe of its run before (an answer, or word its sender turned idle), ignored, or of its sender's run before a restart, taken as busy
	Mismatch          []string
	LostDirs          []string // peers seen to come back with a new data directory, their share lost
	LostURLs          []string // peers whose URLs taken before their hello their block gives other owners: some lost
	NoBye             []string // node 0: peers that did not answer the end of the crawl (missed it, or took it and stopped before their bye)
	Refusing          bool     // fetching nothing: configs differ or the clock is unsafe
	ClockUnsafe       string   // why the clock is unsafe, "" when safe
	Over              bool
	Comm              communicator.Stats
	TerminationRounds uint64
	// DNS prefetch before the swap: rounds (one per slot), hosts resolved,
	// failed (the failure is cached too), and cut off by the next slot's start.
	PrefetchRounds, Prefetched, PrefetchFailed, PrefetchLate uint64
}

// ClusterStats returns the cluster counters (zero without a cluster).
func (n *Node) ClusterStats() ClusterStats {
	c := n.cl
	if c == nil {
		return ClusterStats{Nodes: 1}
	}
	s := ClusterStats{Self: c.self, Nodes: c.cfg.Config.N(), SentURLs: c.sent.Load(), ReceivedURLs: c.recv.Load(),
		Misrouted: c.misrouted.Load(), BadControl: c.badControl.Load(), StaleFinished: c.stale.finished.Load(), StaleBye: c.stale.bye.Load(), StaleState: c.stale.state.Load(), Refusing: c.refuse.Load(),
		Over: c.over.Load(), Comm: c.ep.Stats()}
	if p := c.clockUnsafe.Load(); p != nil {
		s.ClockUnsafe, s.Refusing = *p, true
	}
	s.PrefetchRounds, s.Prefetched = c.pf.rounds.Load(), c.pf.resolved.Load()
	s.PrefetchFailed, s.PrefetchLate = c.pf.failed.Load(), c.pf.late.Load()
	c.mismatchMu.Lock()
	for _, id := range slices.Sorted(maps.Keys(c.lost)) {
		s.LostDirs = append(s.LostDirs, c.lost[id])
	}
	for _, id := range slices.Sorted(maps.Keys(c.taken)) {
		s.LostURLs = append(s.LostURLs, c.taken[id])
	}
	for id, d := range c.mismatch {
		for _, l := range d {
			s.Mismatch = append(s.Mismatch, fmt.Sprintf("node %d: %s", id, l))
		}
	}
	c.mismatchMu.Unlock()
	if c.det != nil {
		c.detMu.Lock()
		s.TerminationRounds = c.det.Round()
		for _, p := range c.noBye {
			s.NoBye = append(s.NoBye, p.msg())
		}
		c.detMu.Unlock()
	}
	return s
}

// countProbe counts a probe round with peer from (writer only): on node
// 0 one it answered (stateOf), on the others one node 0 probed it in.
func (c *nodeCluster) countProbe(from int) {
	c.mismatchMu.Lock()
	c.probes[from]++
	c.mismatchMu.Unlock()
}

// peerStatus fills in ps's drops (the communicator's per-peer counts by
// reason), config mismatch, probe rounds, stale control messages and
// whether it lost its data directory.
func (c *nodeCluster) peerStatus(ps *PeerStatus, drops map[string]uint64) {
	sum := func(reasons ...string) (n uint64) {
		for _, r := range reasons {
			n += drops[r]
		}
		return n
	}
	// Drop reasons (communicator.DropName) by what they say about a
	// datagram in the peer's name.
	ps.DroppedForged = sum("wrong_address", "bad_mac")
	ps.DroppedReplayed = sum("stale_epoch", "duplicate", "handshake")
	ps.DroppedBad = sum("misdirected", "malformed", "window")
	c.mismatchMu.Lock()
	ps.ConfigMismatch = slices.Clone(c.mismatch[ps.Node])
	ps.ProbeRounds = c.probes[ps.Node]
	_, ps.LostDir = c.lost[ps.Node]
	c.mismatchMu.Unlock()
	c.stale.mu.Lock()
	ps.StaleControl = c.stale.from[ps.Node]
	c.stale.mu.Unlock()
	if ps.ConfigMismatch == nil {
		ps.ConfigMismatch = []string{}
	}
}

// staleControl counts the control messages of a run before a restart
// (node 0's, or their sender's), sent again from a spill file: by kind,
// for ClusterStats, and by sender, for the status page's peer rows.
type staleControl struct {
	finished, bye, state atomic.Uint64
	mu                   sync.Mutex
	from                 map[int]uint64
}

// staleSeen counts a stale control message from peer from in kind, and
// logs the first of each kind, msg saying what it was and what was done
// with it. A restart may send many again (a state per round left
// unacknowledged): the rest are counted only, in ClusterStats, the run's
// summary and the peer's stale_control.
func (c *nodeCluster) staleSeen(from int, kind *atomic.Uint64, msg string) {
	c.stale.mu.Lock()
	if c.stale.from == nil {
		c.stale.from = map[int]uint64{}
	}
	c.stale.from[from]++
	c.stale.mu.Unlock()
	if kind.Add(1) == 1 {
		c.n.cfg.Logf("cluster: %s (further ones are counted, not logged: status page, stale_control)", msg)
	}
}

// StaleLine says the control messages of a run before a restart that the
// node ignored, for the run's summary ("" when none): logged only the
// first of each kind, the rest would go unseen.
func (s ClusterStats) StaleLine() string {
	if s.StaleFinished+s.StaleBye+s.StaleState == 0 {
		return ""
	}
	return fmt.Sprintf("%d \"finished\", %d byes and %d states of a run before a restart, sent again from spill files, ignored (a state of its sender's run before taken as busy): harmless; peers' stale_control on the status page",
		s.StaleFinished, s.StaleBye, s.StaleState)
}
