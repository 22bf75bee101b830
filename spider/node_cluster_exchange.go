package spider

// What goes between a cluster's nodes: the URLs a node routes to their
// owners and the control messages it sends (hellos, probes and answers,
// "finished", byes); the batches it receives, admitted by the writer and
// acknowledged once durable, and the control messages among them.
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
	"errors"
	"fmt"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
)

type inbound struct {
	from  communicator.NodeID
	n     uint64
	items []communicator.Item
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
		if err != nil || from != 0 {
			// Only node 0 probes: answered, a probe of another sender
			// took the place of node 0's last (lastProbe), and the word
			// owed to node 0 went out naming the wrong run.
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
