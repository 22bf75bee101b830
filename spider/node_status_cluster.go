package spider

// The cluster's part of a peer's row on the status page.

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

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
