package spider

// The cluster's part of a peer's row on the status page.

import "slices"

// Drop reasons (communicator.DropName) by what they say about a datagram
// in a peer's name.
var (
	dropsForged   = []string{"wrong_address", "bad_mac"}
	dropsReplayed = []string{"stale_epoch", "duplicate", "handshake"}
	dropsBad      = []string{"misdirected", "malformed", "window"}
)

// countProbe counts a probe round with peer from (writer only).
func (c *nodeCluster) countProbe(from int) {
	c.mismatchMu.Lock()
	c.probes[from]++
	c.mismatchMu.Unlock()
}

// peerStatus fills in ps's drops (the communicator's per-peer counts by
// reason), config mismatch, probe rounds and whether it lost its data
// directory.
func (c *nodeCluster) peerStatus(ps *PeerStatus, drops map[string]uint64) {
	sum := func(reasons []string) (n uint64) {
		for _, r := range reasons {
			n += drops[r]
		}
		return n
	}
	ps.DroppedForged, ps.DroppedReplayed, ps.DroppedBad = sum(dropsForged), sum(dropsReplayed), sum(dropsBad)
	c.mismatchMu.Lock()
	ps.ConfigMismatch = slices.Clone(c.mismatch[ps.Node])
	ps.ProbeRounds = c.probes[ps.Node]
	_, ps.LostDir = c.lost[ps.Node]
	c.mismatchMu.Unlock()
	if ps.ConfigMismatch == nil {
		ps.ConfigMismatch = []string{}
	}
}
