package spider

// A node in a cluster (issue 16): links owned by another node go to it
// through the communicator; URLs from peers are admitted by the writer and
// acknowledged once durable; the crawl ends by the coordinator's
// termination detection (spider/cluster package doc).
//
// Durability of what is sent: every URL goes to the communicator's spill
// file (QueueBytes 1), and the writer fsyncs it (Endpoint.Sync) with the
// tree and the scheduler, before the pages whose links they are may be
// stored. So after kill -9 a stored page's links to other nodes are in the
// spill file and are sent after the restart, and a page not stored is
// fetched again, its links found again. What a peer received is
// acknowledged only after the writer synced the tree and scheduler past it
// (Endpoint.Durable), so the peer sends again whatever a crash lost here.
// Control messages (hellos, probes and their answers, "finished", byes)
// wait in the communicator's memory, reach the spill file only at a clean
// stop, and a kill loses them: each is sent again, or its loss is made up
// for, by the cluster's own means (helloLoop, restartedUnanswered,
// checkByes, node_cluster_late.go).

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
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

// ClusterStats is the cluster part of a node's counters.
type ClusterStats struct {
	Self, Nodes       int
	SentURLs          uint64 // links handed to the communicator for their owners
	ReceivedURLs      uint64 // URLs received from peers
	Misrouted         uint64 // URLs received that this node does not own (configs differ)
	BadControl        uint64 // control messages that did not decode
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

type inbound struct {
	from  communicator.NodeID
	n     uint64
	items []communicator.Item
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
	// Every item to the spill file: see the durability note above. The
	// communicator sends this run's items from its write-through copy,
	// so the file is written and fsynced but not read back.
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

// handle is the communicator's handler: it copies the batch for the writer.
func (c *nodeCluster) handle(from communicator.NodeID, n uint64, items []communicator.Item) {
	cp := make([]communicator.Item, len(items))
	size := 0
	for _, it := range items {
		size += len(it.URL)
	}
	buf := make([]byte, 0, size)
	for i, it := range items {
		buf = append(buf, it.URL...)
		cp[i] = communicator.Item{Tag: it.Tag, URL: buf[len(buf)-len(it.URL):]}
	}
	c.n.pending.Add(1)
	c.mu.Lock()
	c.inbox = append(c.inbox, inbound{from, n, cp})
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// clusterReady is the writer's channel for batches from peers (nil, never
// ready, without a cluster).
func (n *Node) clusterReady() <-chan struct{} {
	if n.cl == nil {
		return nil
	}
	return n.cl.ready
}

// takeRemote admits the URLs of the batches received (writer only): control
// messages first, then the URLs through the depth limit, the filters and
// the tree, as links found here would be. It reports whether a sync is
// needed: batches of control messages only, with every earlier batch
// synced, are acknowledged at once, without one.
func (n *Node) takeRemote(outlinks map[uint32]pageLinks) (dirty bool) {
	c := n.cl
	c.mu.Lock()
	in := c.inbox
	c.inbox = nil
	c.mu.Unlock()
	for _, b := range in {
		// Hellos first (a differing config is known before its URLs),
		// then the URLs, then the other control messages, whose answers
		// (a probe's state) must see this batch done.
		for _, it := range b.items {
			if it.Tag == cluster.TagHello {
				c.control(int(b.from), it)
			}
		}
		urls := 0
		for _, it := range b.items {
			if it.Tag > cluster.MaxURLTag {
				continue
			}
			u := string(it.URL)
			urls++
			c.recv.Add(1)
			if c.part.Owner(u) != c.self {
				c.misrouted.Add(1)
				continue
			}
			d, hops := cluster.SplitURLTag(it.Tag)
			if hops > 0 {
				n.budget.hops.put(u, hops)
			}
			n.seeOne(u, d, outlinks)
		}
		if urls > 0 {
			c.gen.Add(1)
			c.unsynced = true
			c.hold(int(b.from)).urls(b.n, urls)
		}
		c.delivered = max(c.delivered, b.n)
		n.pending.Add(-1)
		for _, it := range b.items {
			if it.Tag > cluster.MaxURLTag && it.Tag != cluster.TagHello {
				c.control(int(b.from), it)
			}
		}
		n.poke()
	}
	if len(in) > 0 && !c.unsynced {
		c.acknowledge()
	}
	return c.unsynced
}

// acknowledge acknowledges, per peer, the deliveries processed but a held
// peer's from the first held on (writer only; once synced, or of control
// messages only). Delivery numbers run across all peers: one held peer
// must not hold back the others' acknowledgements.
func (c *nodeCluster) acknowledge() {
	if c.delivered == 0 {
		return
	}
	for id := range c.cfg.Config.Members {
		if id == c.self {
			continue
		}
		n := c.delivered
		if h := c.holds[id]; h != nil && h.first > 0 {
			n = min(n, h.first-1)
		}
		c.ep.DurableFrom(communicator.NodeID(id), n)
	}
}

// route sends u to its owner if that is another node (true), counting it.
func (n *Node) route(u string, d int) bool {
	c := n.cl
	if c == nil {
		return false
	}
	o := c.part.Owner(u)
	if o == c.self {
		return false
	}
	if d > n.cfg.MaxDepth {
		n.st.tooDeep.Add(1)
		return true
	}
	// A redirect's target takes its count of redirects in a row to its
	// owner, which goes on counting (followRedirect).
	tag := cluster.URLTag(d, n.budget.hops.take(u))
	if err := c.ep.Send(communicator.NodeID(o), tag, []byte(u)); err != nil {
		if errors.Is(err, communicator.ErrTooLong) {
			n.st.rejected.Add(1)
			return true
		}
		n.fail(fmt.Errorf("spider: sending %s to node %d: %w", u, o, err))
		return true
	}
	c.sent.Add(1)
	return true
}

// syncCluster makes what the writer sent durable (the spill files) and
// acknowledges what it received, once tree and scheduler are synced.
func (n *Node) syncCluster() error {
	c := n.cl
	if c == nil {
		return nil
	}
	if c.late.overAtOpen.Load() && !c.quiet() && c.late.overAtOpen.CompareAndSwap(true, false) {
		// Work after the end: should this run stop before a new one, the
		// next does not take the crawl as over (node_cluster_late.go).
		// Before the spill files' sync: links this work sent a peer must
		// not wait there under a record of the end.
		c.updateRecord(func(r *clusterRecord) { r.over = false })
	}
	if err := c.ep.Sync(); err != nil {
		return fmt.Errorf("spider: syncing the communicator's spill files: %w", err)
	}
	c.recordUnheard() // node_cluster_record.go
	c.acknowledge()
	c.unsynced = false
	return nil
}

// sendControl sends a control message and flushes its peer's queue: the
// end of the crawl waits on six of them in turn (two probe rounds, then
// finished and bye), each of which would otherwise wait for its batch up
// to the flush interval (1.2 s of a cluster crawl's tail at 200 ms).
func (c *nodeCluster) sendControl(to int, tag uint64, b []byte) {
	if err := c.ep.Send(communicator.NodeID(to), tag, b); err != nil {
		if !errors.Is(err, communicator.ErrClosed) {
			c.n.cfg.Logf("cluster: control message to node %d: %v", to, err)
		}
		return
	}
	c.ep.FlushTo(communicator.NodeID(to))
}

// control handles one control message from peer from (writer only).
func (c *nodeCluster) control(from int, it communicator.Item) {
	switch it.Tag {
	case cluster.TagHello:
		c.hello(from, it) // node_cluster_hello.go
	case cluster.TagProbe:
		r, epoch, err := cluster.DecodeProbe(it.URL)
		if err != nil {
			c.badControl.Add(1)
			return
		}
		c.countProbe(from)
		c.answerProbe(from, r, epoch) // node_cluster_end.go
	case cluster.TagState:
		r, epoch, st, err := cluster.DecodeState(it.URL)
		if err != nil || c.det == nil {
			c.badControl.Add(1)
			return
		}
		if epoch != c.ep.Epoch() {
			// A state of a probe of this node's run before a restart:
			// the answer, sent again once the sender heard of the
			// restart, or its word that it turned idle, sent before it
			// heard (after, it sends none: idleNow). It is of then, and
			// taken for this run's round of the same number it could end
			// the crawl while its sender works (stateOf).
			c.staleSeen(from, &c.stale.state, fmt.Sprintf("node %d's state (round %d) of a probe of this node's run before a restart (its answer, or its word that it turned idle, sent before it heard of the restart) ignored: it is of then", from, r))
			return
		}
		stale := st.Epoch < c.peerEpoch(from)
		if stale {
			// The sender's run before a restart answered, and the answer
			// came again from its spill file: its state is of a run gone,
			// and its Gen of another count than the new run's. Busy, it
			// still completes the round it answers, whose probe that run
			// may have acknowledged (no answer of the new run comes).
			c.staleSeen(from, &c.stale.state, fmt.Sprintf("node %d's state (round %d) of its run before a restart taken as busy: it says nothing of its run now", from, r))
			st.Idle = false
		}
		if err := c.stateOf(from, r, st, stale); err != nil { // node_cluster_end.go
			c.badControl.Add(1)
		}
		c.checkByes()
	case cluster.TagFinished:
		c.finishedBy(from, it) // node_cluster_end.go
	case cluster.TagBye:
		c.byeFrom(from, it) // node_cluster_end.go
	default:
		c.badControl.Add(1)
	}
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
