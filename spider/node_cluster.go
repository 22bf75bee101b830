package spider

// A node in a cluster (issue 16): links owned by another node go to it
// through the communicator; URLs from peers are admitted by the writer and
// acknowledged once durable; the crawl ends by the coordinator's
// termination detection (spider/cluster package doc). What goes between
// the nodes, and how durable it is: node_cluster_exchange.go; the
// cluster's counters: node_status_cluster.go.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
)

// clusterMaxWait is how long a cluster node's scheduler waits, with no
// timer due, before it asks the phase clock again. The clock follows the
// system clock (NTP-corrected, or the system clock itself), and the
// scheduler wakes at the next slot's start by itself; the wait only bounds
// how late it sees the clock become safe again.
const clusterMaxWait = time.Second

// clusterSyncInterval is a cluster node's default SyncInterval, and its
// writer syncs on that ticker only, not also when the fetches pause or a
// page waits for its URL's sync (node_idle.go; a node alone does, to cut
// the latency of its last pages). A sync is some ten fsyncs (tree,
// scheduler, spill files), each of which makes the Go runtime of a
// one-core node hand its P over and poll for a millisecond; a cluster
// node, a quarter as busy as a node alone, paused often and synced 4
// times as often per page. Its pages wait longer to be stored, and its
// peers for acknowledgements (their retransmission timer follows the
// measured round trip). 200 ms and 400 ms both cut the 4 nodes' CPU per
// page by 5-8 % (bench cluster, host partitioning); 400 ms made the
// crawl 10 % longer.
const clusterSyncInterval = 200 * time.Millisecond

// NodeCluster makes a node one of a cluster.
type NodeCluster struct {
	Config cluster.Config
	Secret []byte
	// Comm holds optional communicator settings (Payload, Hook, Clock,
	// timers...); the node sets Self, Peers, Keys, Handler and SpillDir.
	Comm communicator.Config
	// CommDir is the communicator's spill and state directory (default
	// Dir/comm).
	CommDir string
	// RoundEvery is how soon the coordinator (node 0) probes its peers
	// again after a round that found one busy, doubling up to 4 times that
	// while rounds keep finding one busy (default 250 ms). A node that
	// turns idle tells it at once, so that is only the fallback
	// (node_cluster_end.go).
	RoundEvery time.Duration
	// HelloEvery is how often a node sends its peers its hello again
	// (default 10 s): clocks are compared in hellos only, and one stepped
	// or drifting after the start would otherwise go unseen until a
	// restart (node_cluster_hello.go, helloLoop).
	HelloEvery time.Duration
	// PrefetchHosts is how many hosts of its next slot a node resolves
	// before the swap (node_prefetch.go); default 256, < 0: none.
	PrefetchHosts int
	// When set (tests): onPrefetch is called after each prefetch round
	// with the phase, the hosts and the round's deadline; onAnswer once a
	// probe's answer is queued (answerProbe).
	onPrefetch func(ph int, hosts []string, deadline time.Time)
	onAnswer   func(round uint64, st cluster.State)
}

type nodeCluster struct {
	n      *Node
	cfg    NodeCluster
	self   int
	part   cluster.Partitioner
	ep     *communicator.Endpoint
	fields []cluster.Field

	mu    sync.Mutex
	inbox []inbound
	ready chan struct{}

	delivered uint64 // writer only: the last delivery processed
	unsynced  bool   // writer only: URLs admitted since the last sync
	// Writer only: per peer, whether URLs from it are acknowledged
	// (node_cluster_hello.go, peerHold).
	holds map[int]*peerHold
	// Writer only: per peer, its communicator epoch as of its last hello
	// (from DIR/CLUSTER at start, else the communicator's state file: 0 if
	// never heard). A hello saying its directory is fresh under another
	// epoch is a node that lost its directory since (lostDir).
	heard map[int]uint64
	// Writer only: per peer whose phase clock was seen ahead of ours
	// beyond the guard, when (node_cluster_hello.go, clockCheck).
	clockAhead map[int]clockSeen

	mismatchMu sync.Mutex
	mismatch   map[int][]string
	lost       map[int]string // per peer that came back with a new directory: why (lostDir)
	taken      map[int]string // per peer whose URLs were taken unheard and differ: what (takenUnheard)
	probes     map[int]uint64 // per peer: probe rounds answered (node 0) or received (others)

	refuse      atomic.Bool
	clockUnsafe atomic.Pointer[string]
	gen         atomic.Uint64
	over        atomic.Bool
	sent, recv  atomic.Uint64
	misrouted   atomic.Uint64
	badControl  atomic.Uint64
	stale       staleControl // node_status_cluster.go

	recMu sync.Mutex
	rec   clusterRecord // what DIR/CLUSTER holds (node_cluster_record.go)
	late  lateEnd       // a node started after the crawl's end (node_cluster_late.go)

	pf    prefetchStats
	loops sync.WaitGroup // the prefetch and hello loops, waited for by closeCluster

	detMu      sync.Mutex
	det        *cluster.Detector // node 0 only
	finished   uint64            // round of the finished message sent (coordinator) or received
	byes       map[int]bool
	tookEnd    map[int]bool // node 0: peers seen to acknowledge "finished" (checkByes)
	noBye      []silentPeer // peers that had not said bye by the deadline (node 0; nil until then)
	finAt      time.Time
	roundWait  time.Duration  // node 0: before its next round unless kicked (node_cluster_end.go)
	roundEnd   time.Time      // node 0: when the last round that found a node busy ended
	staleRound uint64         // node 0: the last round a state of its sender's run before a restart answered (stateOf)
	probed     map[int]uint64 // node 0: each peer's epoch as the open round's probes left (restartedUnanswered)
	answered   map[int]uint64 // node 0: each peer's last round counted in probes (stateOf)

	kick      chan struct{}           // node 0: start a round now
	owed      atomic.Bool             // others: answered the last probe busy, to tell node 0 once idle; node 0: found itself busy, to kick once done
	lastProbe atomic.Pointer[probeOf] // others: the last probe received (nil: none)
	draining  atomic.Bool             // a goroutine waits for the peers to acknowledge everything
	acked     atomic.Bool             // it saw them do so: look at the state again
}

func (n *Node) openCluster() error {
	nc := *n.cfg.Cluster
	c := &nodeCluster{n: n, cfg: nc, self: nc.Config.Self, part: nc.Config.Partitioner(),
		fields: nc.Config.Canonical(), ready: make(chan struct{}, 1), kick: make(chan struct{}, 1), mismatch: map[int][]string{}, probes: map[int]uint64{}, byes: map[int]bool{}, tookEnd: map[int]bool{}, answered: map[int]uint64{},
		holds: map[int]*peerHold{}, heard: map[int]uint64{}, lost: map[int]string{}, taken: map[int]string{}, clockAhead: map[int]clockSeen{}}
	if c.cfg.RoundEvery <= 0 {
		c.cfg.RoundEvery = 250 * time.Millisecond
	}
	if c.cfg.HelloEvery <= 0 {
		c.cfg.HelloEvery = 10 * time.Second
	}
	addrs, err := nc.Config.Addrs()
	if err != nil {
		return err
	}
	cc := nc.Comm
	cc.Self = communicator.NodeID(c.self)
	cc.Peers = map[communicator.NodeID]netip.AddrPort{}
	for id, a := range addrs {
		cc.Peers[communicator.NodeID(id)] = a
	}
	cc.Keys, cc.SendKey = []communicator.Key{{ID: 1, Secret: nc.Secret}}, 1
	// Hellos and rounds are not URLs: a peer's "URLs wait" leaves them out.
	cc.ControlTag = cluster.MaxURLTag + 1
	cc.Handler = c.handle
	cc.SpillDir = nc.CommDir
	if cc.SpillDir == "" {
		cc.SpillDir = filepath.Join(n.cfg.Dir, "comm")
	}
	// Every URL to the spill file: see the durability note
	// (node_cluster_exchange.go). The communicator sends this run's
	// items from its write-through copy, so the file is written and
	// fsynced but not read back.
	cc.QueueBytes = 1
	// The writer's Sync makes what was sent durable when pages depend on
	// it; the timer's own fsyncs (acknowledged marks, receive positions)
	// only narrow redelivery after a crash, and each cost a node as much
	// CPU as a page or two.
	cc.Lazy = true
	if cc.SpillUpkeepEvery <= 0 {
		// The writer fsyncs the spill files when it must (syncCluster);
		// the timer's own fsyncs only persist acknowledged positions.
		cc.SpillUpkeepEvery = time.Second
	}
	if cc.FlushInterval <= 0 {
		// Its timer ticks every fifth of it, idle or not; a link may wait
		// that long for its batch (slots last minutes), acknowledgements do
		// not (Durable wakes the endpoint).
		cc.FlushInterval = 200 * time.Millisecond
	}
	if cc.Logf == nil {
		cc.Logf = n.cfg.Logf
	}
	if c.self == 0 {
		var peers []int
		for id := range nc.Config.Members {
			if id != 0 {
				peers = append(peers, id)
			}
		}
		c.det = cluster.NewDetector(peers)
	}
	if err := c.openRecord(); err != nil {
		return err
	}
	c.openLate() // node_cluster_late.go
	n.cl = c
	if c.ep, err = communicator.New(cc); err != nil {
		n.cl = nil
		return fmt.Errorf("spider: cluster communicator: %w", err)
	}
	for _, p := range c.ep.Stats().Peers {
		c.heard[int(p.ID)] = p.Epoch
	}
	// The record's epochs, where it has them, over the communicator's: it
	// may have saved a peer's new epoch before this node took the hello
	// that said its directory was new (node_cluster_record.go).
	for id, e := range c.rec.heard {
		c.heard[id] = e
	}
	for id := range nc.Config.Members {
		if id != c.self {
			c.sendControl(id, cluster.TagHello, c.helloMsg(true))
		}
	}
	return nil
}

func nonce() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// gate wraps the scheduler's phase source of a cluster node: no list
// starts while the cluster configs differ or the clock is unsafe, and both
// are logged when they change. n is filled in once the node exists.
type gate struct {
	inner scheduler.PhaseSource
	n     **Node
}

func (g gate) Phase() scheduler.Phase {
	p := g.inner.Phase()
	n := *g.n
	if n == nil || n.cl == nil {
		p.MayStart = false
		return p
	}
	c := n.cl
	if !p.Safe {
		why := "the phase clock is unsafe"
		if f := n.cfg.ClockStatus; f != nil {
			why += ": " + f().Reason
		}
		if old := c.clockUnsafe.Swap(&why); old == nil {
			n.cfg.Logf("cluster: fetching nothing: %s", why)
		}
	} else if old := c.clockUnsafe.Swap(nil); old != nil {
		n.cfg.Logf("cluster: the phase clock is safe again; fetching")
	}
	if c.refuse.Load() {
		p.MayStart = false
	}
	return p
}

// listContext ends a cluster node's list at its Until, the start of the
// slot's closing guard: past it another node may work on the host.
func (n *Node) listContext(ctx context.Context, l scheduler.List) (context.Context, context.CancelFunc) {
	if n.cl == nil || l.Until.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, l.Until)
}

// over reports whether the cluster's crawl has ended (always, alone).
func (n *Node) clusterOver() bool { return n.cl == nil || n.cl.over.Load() }

// closeCluster lets the last messages go (bounded), then closes the
// communicator; items not acknowledged stay in its spill files.
func (n *Node) closeCluster() error {
	c := n.cl
	if c == nil {
		return nil
	}
	c.loops.Wait() // their context ended with Run
	if c.over.Load() && c.self != 0 {
		stop := make(chan struct{})
		t := time.AfterFunc(2*time.Second, func() { close(stop) })
		c.ep.WaitBacklog(0, 0, stop)
		t.Stop()
	}
	return c.ep.Close()
}
