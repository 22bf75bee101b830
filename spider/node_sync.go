package spider

// The writer's syncs run on a goroutine of their own (alone; a cluster
// node syncs on the writer, see below). A sync of the tree and the
// scheduler took 80 ms on average on a busy disk, up to half a second, and
// while the writer waited on it no link of any page became a URL the
// scheduler could hand out: the crawl ran in bursts between syncs. Now the
// writer goes on adding what comes in while the files are written back
// (urltree and scheduler Sync hold their locks only to take the commit).
//
// The durability order holds: the writer takes the tree's length between
// two sightings, when every id below it is in the tree and the scheduler
// both; the sync makes the tree durable, then the scheduler, and only then
// publishes that length (syncTo) and closes the done channels of the
// messages the writer had processed before it took the length. One sync
// runs at a time; a sync asked for meanwhile (by the ticker, a page waiting
// for its id, an idle fetch) runs once the running one ends, so the syncs
// are asked for exactly when they were before.
//
// A cluster node syncs on the writer as before: syncCluster reads the
// writer's own state (what peers delivered).

// clusterHeldSyncBytes is heldSyncBytes for a cluster node, whose writer
// otherwise syncs on its ticker only (clusterSyncInterval). At
// heldSyncBytes a node of the bench's 4-node cluster (some 200 pages a
// second of 10-30 KB records) asked for a sync after nearly every list:
// 80 syncs of about ten fsyncs each in a 5 s crawl, two or three times
// its ticks, each fsync a hand-off of the node's one P and a round of the
// runtime's sysmon. Records of 200 ms at that rate are well under this;
// it still bounds what a busy cluster node holds.
const clusterHeldSyncBytes = 4 << 20

// writerSync is the writer's view of its background sync.
type writerSync struct {
	running bool
	again   bool            // a sync was asked for while one ran
	batch   []chan struct{} // closed when the running sync succeeds
	lowers  []laterLower    // applied when it succeeds (node_lower.go)
	result  chan bool       // the running sync's outcome
}

// sync starts a sync covering everything the writer has processed, whose
// messages' done channels are waiting; it returns the slice to collect
// the next ones in. With a sync running it only notes that another is
// wanted.
func (ws *writerSync) sync(n *Node, waiting []chan struct{}) []chan struct{} {
	if n.cl != nil {
		return syncHere(n, waiting)
	}
	if ws.running {
		ws.again = true
		return waiting
	}
	if ws.result == nil {
		ws.result = make(chan bool, 1)
	}
	ws.running, ws.batch, ws.lowers = true, waiting, n.dstore.takeLater()
	l := n.tree.Len()
	go func() { ws.result <- n.syncTo(l) }()
	return nil
}

// done takes the running sync's outcome ok (received from ws.result): the
// messages it covered are durable. It starts the sync asked for meanwhile.
func (ws *writerSync) done(n *Node, ok bool, waiting []chan struct{}) []chan struct{} {
	ws.running = false
	if ok {
		n.dstore.applyLater(ws.lowers)
		for _, c := range ws.batch {
			close(c)
		}
	}
	ws.batch, ws.lowers = nil, nil
	if ws.again {
		ws.again = false
		waiting = ws.sync(n, waiting)
	}
	return waiting
}

// wait waits for the running sync, if any, and takes its outcome; then
// the writer may sync on its own goroutine (its last sync).
func (ws *writerSync) wait(n *Node) {
	if ws.running {
		ws.again = false
		ws.done(n, <-ws.result, nil)
	}
}

// results is the channel the running sync's outcome comes on (nil, never
// ready, when none runs).
func (ws *writerSync) results() <-chan bool {
	if !ws.running {
		return nil
	}
	return ws.result
}

// syncHere syncs on the caller's goroutine (the writer's) and closes the
// done channels of waiting once it succeeded; it returns the slice to
// collect the next ones in.
func syncHere(n *Node, waiting []chan struct{}) []chan struct{} {
	lowers := n.dstore.takeLater()
	if !n.syncAll() {
		return waiting
	}
	n.dstore.applyLater(lowers)
	for _, c := range waiting {
		close(c)
	}
	return waiting[:0]
}
