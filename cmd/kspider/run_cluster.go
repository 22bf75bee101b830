package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/cluster"
)

// oneNode names a config's single node for an error.
func oneNode(nodes []spider.RunNode) string {
	if len(nodes) == 0 {
		return "with no cluster.nodes"
	}
	return fmt.Sprintf("id %d", nodes[0].ID)
}

// runCluster is what `kspider run` needs for a cluster of more than one
// node or phase: the node's cluster settings and its phase source, the
// NTP clock running under ctx. nil settings: one node, one phase.
type runCluster struct {
	node   *spider.NodeCluster
	clock  scheduler.PhaseSource
	phases int
	// status is this node's status address from its cluster.nodes entry
	// ("" when not given).
	status string
	// logPrefix starts each of the node's log lines ("node 2: "): the
	// nodes of a test or of one terminal share a screen.
	logPrefix string
	// clockStatus is the NTP clock's view of itself, for the status page
	// (nil without NTP).
	clockStatus func() scheduler.Status
}

func setupCluster(ctx context.Context, e env, cfg *spider.RunConfig, nodeFlag int) (*runCluster, error) {
	cl := cfg.Cluster
	if !cfg.IsCluster() {
		// Else a --node meant for a cluster's config would crawl here as
		// the one node, taking no part in the cluster it was meant for.
		if nodeFlag != -1 && (len(cl.Nodes) == 0 || nodeFlag != cl.Nodes[0].ID) {
			return nil, usagef("--node %d: the config has one node alone, %s", nodeFlag, oneNode(cl.Nodes))
		}
		return nil, nil
	}
	if nodeFlag != -1 && !slices.ContainsFunc(cl.Nodes, func(n spider.RunNode) bool { return n.ID == nodeFlag }) {
		// How the command was called: exit 2, as for a node alone.
		return nil, usagef("--node %d is not in cluster.nodes (ids 0 to %d)", nodeFlag, len(cl.Nodes)-1)
	}
	local, err := cluster.LocalAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing this machine's addresses: %w", err)
	}
	members := make([]cluster.Member, len(cl.Nodes))
	for i, m := range cl.Nodes {
		members[i] = cluster.Member{ID: m.ID, UDP: m.UDP, Status: m.Status}
	}
	self, how, err := cluster.Identify(members, nodeFlag, cl.Node, local)
	if err != nil {
		return nil, err
	}
	cc, err := cfg.ClusterConfig(self)
	if err != nil {
		return nil, err
	}
	var secret []byte
	if cl.SecretFile != "" {
		if secret, err = cluster.ReadSecret(cl.SecretFile); err != nil {
			return nil, err
		}
	} else if len(cl.Nodes) == 1 {
		secret = []byte("one node alone: no peer to authenticate")
	} else {
		return nil, fmt.Errorf("cluster.secret_file is required with %d nodes", len(cl.Nodes))
	}
	sch := cc.FetchSchedule()
	rc := &runCluster{phases: sch.Phases, logPrefix: fmt.Sprintf("node %d: ", self), status: cc.Members[self].Status,
		node: &spider.NodeCluster{Config: cc, Secret: secret}}
	turns := fmt.Sprintf("%d phases of %v", cc.Phases, cc.PhaseLength)
	if !cc.Turns() {
		turns = "no turns (a host is fetched by its owner only)"
	}
	fmt.Fprintf(e.stderr, "cluster: this is node %d of %d (%s), %s, partition by %s\n",
		self, cc.N(), how, turns, cc.Partition)
	// The node's socket, bound before the data directory is opened: a
	// node started on the wrong machine (or as the wrong --node) fails
	// here, before its directory records a share that is not its own.
	addrs, err := cc.Addrs()
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[self]))
	if errors.Is(err, syscall.EADDRINUSE) {
		// The address is this machine's: moving the node would not help.
		return nil, fmt.Errorf("cluster: this is node %d (%s), but its udp address %s (cluster.nodes[id %d].udp %q) is in use by another process on this machine (node %d already running?): %v; stop that process first (ss -ulpn shows it)",
			self, how, addrs[self], self, cc.Members[self].UDP, self, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: this is node %d (%s), but its udp address %s (cluster.nodes[id %d].udp %q) cannot be bound here: %v; run it on node %d's machine, or say which node this machine is with --node",
			self, how, addrs[self], self, cc.Members[self].UDP, err, self)
	}
	rc.node.Comm.Conn = conn
	if len(cfg.NTPServers) == 0 {
		// Without NTP the clocks of the nodes are trusted to agree
		// within half the guard.
		rc.clock = cluster.SystemClock(sch, self, cluster.Guard, nil)
		fmt.Fprintf(e.stderr, "cluster: no ntp_servers: the phase clock is the system clock as is, guard %v (keep the nodes' clocks within %v of each other)\n",
			cluster.Guard, cluster.Guard/2)
		return rc, nil
	}
	clock, err := scheduler.NewClock(scheduler.ClockConfig{NTP: scheduler.NTPConfig{Servers: cfg.NTPServers}, Guard: cluster.Guard})
	if err != nil {
		conn.Close()
		return nil, err
	}
	go clock.Run(ctx)
	rc.clock = scheduler.NodeClock(clock, sch, self)
	rc.clockStatus = clock.Status
	return rc, nil
}

// summary is the cluster's line at the end of a run.
func (rc *runCluster) summary(n *spider.Node) string {
	s := n.ClusterStats()
	line := fmt.Sprintf("cluster: node %d of %d: sent %d URLs to peers, received %d; %d datagrams (%d bytes) out, %d retransmitted, %d dropped",
		s.Self, s.Nodes, s.SentURLs, s.ReceivedURLs, s.Comm.SentDatagrams, s.Comm.SentBytes, s.Comm.Retransmits, sumDrops(s.Comm.Drops))
	for _, m := range s.Mismatch {
		line += "\ncluster: config differs: " + m
	}
	if s.ClockUnsafe != "" {
		line += "\ncluster: " + s.ClockUnsafe
	}
	for _, l := range slices.Concat(s.LostDirs, s.LostURLs) {
		line += "\ncluster: " + l
	}
	for _, l := range s.NoBye {
		line += "\ncluster: " + l
	}
	if l := s.StaleLine(); l != "" {
		line += "\ncluster: " + l
	}
	for _, p := range s.Comm.Peers {
		if p.Down {
			line += "\ncluster: " + downLine(p)
			if n := p.Drops["bad_mac"]; n > 0 {
				line += fmt.Sprintf("; %d datagrams in its name failed authentication: has it the same cluster.secret_file as this node?", n)
			}
		}
	}
	return line
}

// downLine says what waits for peer p, down: the URLs, not the hellos and
// rounds queued beside them (a peer gone for good has those too).
func downLine(p communicator.PeerStats) string {
	urls := p.Queued + p.UnackedItems + int(p.SpillItems) - p.ControlItems
	spilled := p.SpillItems - p.SpillControlItems
	return fmt.Sprintf("node %d is down: %d URLs wait for it (%d in the spill file)", p.ID, max(urls, 0), max(spilled, 0))
}

// lostShares is the error of a run whose crawl ended while peers came
// back with a new data directory, or sent URLs, taken before their hello,
// under a block that gives other owners: such URLs are not all in the
// union of the stores, and an exit 0 would say the crawl is complete; an
// exit 1 would have systemd start the node again, to wait for peers that
// are gone.
func (rc *runCluster) lostShares(n *spider.Node) error {
	s := n.ClusterStats()
	lost := slices.Concat(s.LostDirs, s.LostURLs)
	if len(lost) == 0 {
		return nil
	}
	return lostDataError{"the crawl is over, but short of the web: " + strings.Join(lost, "; ")}
}

func sumDrops(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
