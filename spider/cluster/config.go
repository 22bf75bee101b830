package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/kspider/kspider/scheduler"
)

// Guard is the interval kept free of new fetches at each end of a slot by
// `kspider run`'s phase clock, with NTP or without: twice the bound of
// 100 ms on a node's clock error (scheduler.ClockConfig's defaults). With
// turns a slot must be longer than two guards, or a node never fetches.
const Guard = 200 * time.Millisecond

// Config is the cluster block of the run config, the same on every node
// but for Self (spider.RunCluster converted; this package does not import
// spider, which imports it).
type Config struct {
	Self        int
	Members     []Member // indexed by id after Check
	Phases      int
	PhaseLength time.Duration
	Epoch       time.Time
	Partition   Partition
}

// Member is one node of the cluster.
type Member struct {
	ID     int
	UDP    string // host:port of its communicator
	Status string // host:port of its status page; may be empty
}

// Check orders Members by id and checks what the node relies on: ids
// 0..N-1 each once, P >= N, a positive phase length and an epoch.
func (c *Config) Check() error {
	n := len(c.Members)
	if n == 0 {
		return errors.New("cluster: no nodes")
	}
	by := make([]Member, n)
	seen := make([]bool, n)
	for _, m := range c.Members {
		if m.ID < 0 || m.ID >= n || seen[m.ID] {
			return fmt.Errorf("cluster: node ids must be 0..%d, each once (id %d)", n-1, m.ID)
		}
		seen[m.ID] = true
		by[m.ID] = m
	}
	c.Members = by
	if c.Self < 0 || c.Self >= n {
		return fmt.Errorf("cluster: this node's id %d is not among the %d nodes", c.Self, n)
	}
	return c.Schedule().Validate()
}

// N is the number of nodes.
func (c *Config) N() int { return len(c.Members) }

// Schedule is the phase schedule every node follows.
func (c *Config) Schedule() scheduler.Cluster {
	return scheduler.Cluster{Epoch: c.Epoch, PhaseLength: c.PhaseLength, Phases: c.Phases, Nodes: len(c.Members)}
}

// Turns reports whether the nodes take turns on hosts, phase by phase
// (node i on phase (i + t) mod P in slot t). They must with url
// partitioning, where every node owns URLs of every host. With host or
// domain partitioning all of a host's URLs sit on one node, the only one
// that ever fetches from it, so no two nodes can fetch from one host at
// once without turns; the slots would only make every host wait for its
// owner's turn, P-1 slots of P.
func (c *Config) Turns() bool { return c.Partition == ByURL }

// FetchSchedule is the schedule a node's scheduler follows: Schedule with
// turns; without (Turns), one phase in day-long slots, as for a node alone
// (the slots' ends only make the scheduler rescan).
func (c *Config) FetchSchedule() scheduler.Cluster {
	if c.Turns() {
		return c.Schedule()
	}
	return scheduler.Cluster{Epoch: c.Epoch, PhaseLength: 24 * time.Hour, Phases: 1, Nodes: 1}
}

// Partitioner is the URL → node map.
func (c *Config) Partitioner() Partitioner {
	return Partitioner{By: c.Partition, Nodes: len(c.Members)}
}

// Addrs resolves every member's UDP address (host names through the
// system resolver, once, at start), refusing one no peer can use
// (CheckUDP) and two members on one address.
func (c *Config) Addrs() (map[int]netip.AddrPort, error) {
	out := make(map[int]netip.AddrPort, len(c.Members))
	by := make(map[netip.AddrPort]int, len(c.Members))
	for _, m := range c.Members {
		ap, err := netip.ParseAddrPort(m.UDP)
		if err != nil {
			ua, rerr := net.ResolveUDPAddr("udp", m.UDP)
			if rerr != nil {
				return nil, fmt.Errorf("cluster.nodes[id %d].udp %q: %w", m.ID, m.UDP, rerr)
			}
			ap = ua.AddrPort()
		}
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if err := CheckUDP(ap); err != nil {
			return nil, fmt.Errorf("cluster.nodes[id %d].udp %q: %w", m.ID, m.UDP, err)
		}
		if j, ok := by[ap]; ok {
			return nil, fmt.Errorf("cluster.nodes[id %d].udp %q is %s, as node %d's is: each node needs an address of its own", m.ID, m.UDP, ap, j)
		}
		by[ap] = m.ID
		out[m.ID] = ap
	}
	return out, nil
}

// CheckUDP says why ap cannot be a node's communicator address: peers
// send to it, and take a node's datagrams only from it, so it must be an
// address of the node's own (a socket bound to the unspecified address
// sends from the interface's, which its peers refuse).
func CheckUDP(ap netip.AddrPort) error {
	a := ap.Addr().Unmap()
	switch {
	case ap.Port() == 0:
		return errors.New("port 0: peers need the port the node binds")
	case a.IsUnspecified():
		return fmt.Errorf("%s is the unspecified address, which peers cannot send to; give the node's own address", a)
	case a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s is a multicast or broadcast address; give the node's own address", a)
	}
	return nil
}
