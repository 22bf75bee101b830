package spider

import "time"

// nodeKeepIdle is how long the collector keeps a list's connection for the
// host's next list (collector.Config.KeepIdle): the next list of a host
// follows within milliseconds when the politeness delay is short and
// fetchers are free, within seconds when many hosts wait for the fetchers
// (1 s kept 2,602 connections of a 1,000-host crawl to 1,959; 5 s to 828),
// and a dial, a TLS handshake and a lingering close per list were a fifth
// of a crawl's CPU on a many-host web. The connection stays the host's one
// connection; Run closes those left when the crawl ends.
const nodeKeepIdle = 5 * time.Second

// keepIdle is the collector's KeepIdle for cfg: none when the politeness
// delay outlasts the keeping anyway. In a cluster with turns (url
// partitioning) a list's context ends at its slot's guard (listContext),
// and the collector keeps a connection no longer than that: the host's
// next list in the slot is this node's (1,975 connections of a 4-node
// crawl of the 1,000-host test web to about 1,560), and by the time
// another node may work on the host the connection is closed. By host or
// domain a host has one owner, the only node that ever connects to it,
// which keeps connections as a node alone does. With a per-IP limit the
// collector closes the connections kept at an address before it dials
// there (collector.Config.KeepPerAddr), so that they never add to it.
func keepIdle(cfg NodeConfig) time.Duration {
	if cfg.Scheduler.MinDelay >= nodeKeepIdle {
		return 0
	}
	return nodeKeepIdle
}
