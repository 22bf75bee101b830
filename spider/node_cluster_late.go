package spider

// A node started after its cluster's crawl ended (restarted by hand or
// by a reboot, or down when node 0 said "finished") waited for ever: its
// peers were gone, and nobody probes a node that is alone. So the end is
// kept in DIR/CLUSTER (node_cluster_record.go), and a node that knows
// the crawl was over before its run, from its record or from a peer's
// hello saying so (Hello.Over), stops by itself once
//
//   - it has had nothing to do in this run: no URL new to it, no fetch,
//     nothing left to fetch or admit, its cluster block agreed;
//   - and each peer either said the same in its latest hello, or has not
//     been heard from for lateWait (a running node sends its hellos every
//     HelloEvery: one silent that long is gone, say stopped so itself
//     with its last hello lost).
//
// A peer that got anything to do in its run (a raised max_depth, URLs
// new to it) says nothing of the kind, and every node that hears it goes
// on to the coordinator's end as before. Start the nodes of a crawl
// resumed after its end within lateWait of each other: a node that
// stopped meanwhile is shown down by the others, and started again takes
// its part.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/spider/cluster"
)

// lateEnd is a node's view of a crawl that was over before its run.
type lateEnd struct {
	started time.Time
	knows   atomic.Bool // the crawl was over before this run
	// running: Run started the loops, after it queued the start's work
	// (seeds, a pass over the store): before, a node looks done and quiet
	// whatever that work brings, and its first hello (sent at open) said
	// the crawl over from a node about to admit new seeds.
	running atomic.Bool
	// overAtOpen: the record said so at start, and this run has not yet
	// had work; its first clears the record's end (syncCluster).
	overAtOpen atomic.Bool
	learned    chan struct{} // closed when knows turns true

	mu      sync.Mutex
	how     string            // how this node knows: its record, or which peer said so
	said    map[int]bool      // per peer heard in this run: whether its latest hello said the crawl was over
	heardAt map[int]time.Time // per peer heard in this run: when its latest hello came
}

// lateWait is how long a node that knows the crawl was over waits to
// hear from a silent peer before it stops.
func (c *nodeCluster) lateWait() time.Duration { return 3 * c.cfg.HelloEvery }

// openLate sets up the watch (openCluster, before the first hello).
func (c *nodeCluster) openLate() {
	c.late = lateEnd{started: time.Now(), learned: make(chan struct{}), said: map[int]bool{}, heardAt: map[int]time.Time{}}
	if c.rec.over {
		c.late.overAtOpen.Store(true)
		c.learn("its data directory says so (" + ClusterFile + ")")
	}
}

// learn notes that the crawl was over before this run.
func (c *nodeCluster) learn(how string) bool {
	if !c.late.knows.CompareAndSwap(false, true) {
		return false
	}
	c.late.mu.Lock()
	c.late.how = how
	c.late.mu.Unlock()
	close(c.late.learned)
	return true
}

// quiet reports whether this run has had nothing to do: no URL new to
// this node, no fetch. Its start's work (seeds known already, a pass over
// the store that found nothing) leaves it quiet.
func (c *nodeCluster) quiet() bool {
	st := &c.n.st
	return st.admitted.Load() == 0 && st.fetched.Load() == 0 && st.errors.Load() == 0 && st.denied.Load() == 0
}

// settled reports whether this node can say the crawl is over: it knows
// it was before its run, and it has had nothing to do since.
func (c *nodeCluster) settled() bool {
	if !c.late.running.Load() || !c.late.knows.Load() || !c.quiet() || !c.n.done() || c.refuse.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inbox) == 0
}

// helloSaid notes what peer from's hello said of the end (writer only).
// One that says the crawl was over teaches a node that did not know, which
// tells its peers at once: one of them may wait for its word.
func (c *nodeCluster) helloSaid(from int, over bool) {
	c.late.mu.Lock()
	c.late.said[from], c.late.heardAt[from] = over, time.Now()
	c.late.mu.Unlock()
	if over && c.learn(fmt.Sprintf("node %d says so", from)) {
		for _, p := range c.ep.Stats().Peers {
			if !p.Down && int(p.ID) != c.self {
				c.sendControl(int(p.ID), cluster.TagHello, c.helloMsg(false))
			}
		}
	}
}

// lateLoop stops the node once it knows the crawl was over before its
// run and the conditions above hold. It waits idle until the node knows.
func (c *nodeCluster) lateLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-c.late.learned:
	}
	t := time.NewTicker(c.cfg.RoundEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.over.Load() {
			return
		}
		if why, ok := c.lateOver(); ok {
			c.n.cfg.Logf("cluster: the crawl was over before this run (%s), and this node has had nothing to do since; %s: stopping", c.lateHow(), why)
			c.updateRecord(func(r *clusterRecord) { r.over = true })
			// The peers that wait for its word.
			for _, p := range c.ep.Stats().Peers {
				if !p.Down && int(p.ID) != c.self {
					c.sendControl(int(p.ID), cluster.TagHello, c.helloMsg(false))
				}
			}
			c.finish()
			return
		}
	}
}

func (c *nodeCluster) lateHow() string {
	c.late.mu.Lock()
	defer c.late.mu.Unlock()
	return c.late.how
}

// lateOver reports whether this node, started after the end, may stop
// now, and says of its peers why.
func (c *nodeCluster) lateOver() (string, bool) {
	if !c.settled() {
		return "", false
	}
	var say, silent []string
	for _, p := range c.ep.Stats().Peers {
		id := int(p.ID)
		if id == c.self {
			continue
		}
		c.late.mu.Lock()
		over, last := c.late.said[id], c.late.heardAt[id]
		c.late.mu.Unlock()
		if last.IsZero() {
			last = c.late.started
		}
		switch {
		case over:
			say = append(say, fmt.Sprint(id))
		case time.Since(last) >= c.lateWait():
			silent = append(silent, fmt.Sprint(id))
		default:
			return "", false
		}
	}
	var why []string
	if len(say) > 0 {
		why = append(why, nodes(say)+" said so too")
	}
	if len(silent) > 0 {
		why = append(why, fmt.Sprintf("%s not heard from in %v", nodes(silent), c.lateWait()))
	}
	return strings.Join(why, "; "), true
}

// nodes names peers ids: "node 1", "nodes 1, 2".
func nodes(ids []string) string {
	if len(ids) == 1 {
		return "node " + ids[0]
	}
	return "nodes " + strings.Join(ids, ", ")
}
