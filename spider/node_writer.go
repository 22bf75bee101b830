package spider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/urltree"
)

// found is one message to the writer: the seeds, or the links of a
// list's pages. done, when set, is closed once the links are durable in the
// tree and the scheduler (the pages are stored only then).
type found struct {
	seeds    []string
	pages    []pageLinks
	done     chan struct{}
	syncSoon bool // too many bytes wait for a sync (node_held.go)
	// raise, when set, asks for the pass over the stored pages a raised
	// depth limit or a changed scope needs (node_depthlimit.go), cut
	// short when it ends: the crawl's context.
	raise context.Context
}

// pageLinks are the links of one page.
type pageLinks struct {
	parent uint32   // the page the links are on
	depth  int      // the page's depth; its links are at depth+1
	links  []string // canonical URLs at depth+1
	same   []string // redirect targets: at depth
}

// writer is the only goroutine that adds to the URL tree and the
// scheduler. It syncs both (tree first) every SyncInterval while there are
// unsynced additions and whenever a page waits for its id (waitSynced).
func (n *Node) writer(msgs <-chan found) {
	// The ticker runs only while something is unsynced: an idle node (a
	// cluster node waiting for its phase) is not woken for nothing.
	tick := time.NewTicker(n.cfg.SyncInterval)
	defer tick.Stop()
	ticking := true
	arm := func() {
		if !ticking {
			tick.Reset(n.cfg.SyncInterval)
			ticking = true
		}
	}
	// outlinks keeps the links of fetched pages at depth > 0, in case a
	// shorter path to the page turns up and its links must be followed
	// again from the new depth (scope.Decision.Reexpand), until the page is
	// durable (pruneOutlinks, after each sync); later, and after a restart,
	// reexpand reads them back from the store.
	outlinks := map[uint32]pageLinks{}
	var waiting []chan struct{} // done channels of messages processed since the last sync
	var ws writerSync           // node_sync.go
	sync := func() {
		waiting = ws.sync(n, waiting)
		if n.cl != nil { // synced on the writer (node_sync.go)
			n.pruneOutlinks(outlinks) // node_outlinks.go
		}
	}
	// A cluster node syncs on the ticker only (clusterSyncInterval).
	paced := n.cl != nil
	dirty := false
	if n.cl != nil { // what peers sent before the start: a differing config stops fetches first
		n.takeRemote(outlinks)
	}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				ws.wait(n)
				syncHere(n, waiting)
				return
			}
			if m.raise != nil {
				n.raiseDepth(m.raise, outlinks)
			}
			n.seeSeeds(m.seeds, outlinks)
			for _, p := range m.pages {
				// The page may have been found shallower since its
				// links were extracted (the writer lowered it, and
				// reexpand found no links in outlinks yet): they count
				// from its depth now.
				if d, ok := n.dstore.depthOf(p.parent); ok && int(d) < p.depth {
					p.depth = int(d)
				}
				if p.depth > 0 {
					outlinks[p.parent] = p
				}
				n.see(p, outlinks)
			}
			if m.done != nil {
				waiting = append(waiting, m.done)
			}
			dirty = true
			arm()
			n.pending.Add(-1)
			n.poke()
			soon := m.syncSoon && (!paced || n.held.Load() > clusterHeldSyncBytes) // node_sync.go
			if len(waiting) > 0 && (soon || len(msgs) == 0 && n.idleSync.Load() && !paced) {
				sync() // nothing more is coming soon (node_idle.go)
				dirty = false
			}
		case <-n.fetchIdle:
			if len(waiting) > 0 && !paced {
				sync()
				dirty = false
			}
		case <-n.clusterReady():
			if n.takeRemote(outlinks) {
				dirty = true
				arm()
			}
		case ok := <-ws.results():
			waiting = ws.done(n, ok, waiting)
			n.pruneOutlinks(outlinks)
		case <-n.syncReq:
			if !paced {
				sync()
				dirty = false
			}
		case <-tick.C:
			if dirty || len(waiting) > 0 {
				sync()
				dirty = false
			} else {
				tick.Stop()
				ticking = false
			}
		}
	}
}

// syncAll syncs the tree, then the scheduler, and publishes the length.
// On failure it stops the crawl and closes n.syncFailed.
func (n *Node) syncAll() bool { return n.syncTo(n.tree.Len()) }

// syncTo is syncAll publishing length l, taken by the writer when every id
// below it was in the tree and the scheduler (node_sync.go).
func (n *Node) syncTo(l int) bool {
	err := n.dirs.check() // node_dirs.go
	if err == nil {
		err = n.tree.Sync()
	}
	if err == nil {
		err = n.stores.note(false) // node_stores.go
	}
	if err == nil {
		err = n.sched.SyncUpTo(uint64(l)) // not past the tree's commit
	}
	if err == nil {
		err = n.syncCluster()
	}
	if err != nil {
		n.writeFailed(fmt.Errorf("spider: syncing the URL tree and scheduler: %w", err))
		return false
	}
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	if n.syncErr != nil {
		// An addition failed (writeFailed): the messages this sync
		// covers may have lost links, so none of them counts as durable.
		return false
	}
	n.syncedLen = l
	n.syncCond.Broadcast()
	return true
}

// waitSynced blocks until URL id is durable in the tree and the scheduler
// (see the durability order in the package doc).
func (n *Node) waitSynced(id uint32) error {
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	for int(id) >= n.syncedLen && n.syncErr == nil {
		select {
		case n.syncReq <- struct{}{}:
		default:
		}
		n.syncCond.Wait()
	}
	return n.syncErr
}

// writeFailed stops the crawl on err, a failed sync or a URL the tree or
// the scheduler could not take (a full disk). From then on no message's
// links count as durable and no page waiting for its id is stored: a page
// stored with a link lost is completed, and the link never seen again.
func (n *Node) writeFailed(err error) {
	n.syncMu.Lock()
	if n.syncErr == nil {
		n.syncErr = err
		close(n.syncFailed)
	}
	n.syncCond.Broadcast()
	n.syncMu.Unlock()
	n.fail(err)
}

// seeSeeds sees the seeds, and says how many the scope refuses, naming
// the first: counted rejected among the links only, a seed left out by a
// mistyped include made the crawl "finish" at once, exit 0, with nothing
// said.
func (n *Node) seeSeeds(seeds []string, outlinks map[uint32]pageLinks) {
	refused, first := 0, ""
	for _, u := range seeds {
		if r := n.filter.Check(u); r != scope.OK {
			if refused == 0 {
				first = fmt.Sprintf("%q: %v", u, r)
			}
			refused++
		}
		n.seeOne(u, 0, outlinks)
	}
	if refused > 0 {
		n.cfg.Logf("spider: %d of the %d seeds are outside the scope, not crawled (first: %s); see the scope section of the config", refused, len(seeds), first)
	}
}

func (n *Node) see(m pageLinks, outlinks map[uint32]pageLinks) {
	for _, u := range m.same {
		n.seeOne(u, m.depth, outlinks)
	}
	for _, u := range m.links {
		n.seeOne(u, m.depth+1, outlinks)
	}
}

// seeOne is one sighting of u at depth d: the depth limit (by the
// scheduler's stored depth, see treeDepth), the scope filters, then the tree
// and the scheduler. A URL found shallower than before is lowered in the
// scheduler (by treeDepth) and, if already fetched, its links are seen again
// from the new depth.
func (n *Node) seeOne(u string, d int, outlinks map[uint32]pageLinks) {
	if n.route(u, d) { // owned by another node of the cluster
		return
	}
	// A redirect's target: the redirects in a row that led to it.
	hops := n.budget.hops.take(u)
	n.dstore.outlinks = outlinks // for treeDepth.Lower (node_lower.go)
	dec := n.depth.Seen(u, d)
	if dec.Reason == scope.TooDeep {
		n.st.tooDeep.Add(1)
		return
	}
	if !dec.Crawl && !dec.Reexpand {
		return
	}
	ds := &n.dstore
	if ds.known {
		if dec.Reexpand {
			n.reexpand(u, ds.id, dec.Depth, outlinks)
		} else if n.filter.Check(u) == scope.OK {
			// Known beyond the limit until now (queued before
			// limits.max_depth was lowered): lowered, now due; queued
			// again if a list dropped it meanwhile (presets).
			if _, err := n.requeue(ds.id); err != nil {
				n.writeFailed(fmt.Errorf("%w (%s)", err, u))
			}
		}
		return
	}
	if r := n.filter.Admit(u); r != scope.OK {
		n.st.rejected.Add(1)
		return
	}
	if k := hostKey(u); len(k) > scheduler.MaxHostLen {
		// The scheduler takes every canonical URL's key (a host name as
		// long as DNS allows, with "https:" and a port); should the two
		// ever part, one bad link, not a reason to stop the crawl.
		n.cfg.URLLogf("url %q: its scheduler host key is %d bytes, over the %d the scheduler takes", u, len(k), scheduler.MaxHostLen)
		n.st.rejected.Add(1)
		return
	}
	if r := n.spend(u); r != scope.OK { // the budgets (node_budget.go)
		n.filter.Count(r)
		n.st.rejected.Add(1)
		return
	}
	id, added, err := n.tree.AddString(u)
	if errors.Is(err, urltree.ErrURLTooLong) || errors.Is(err, urltree.ErrEmptyURL) {
		n.cfg.URLLogf("url %q: %v", u, err)
		n.st.rejected.Add(1)
		return
	}
	if err != nil { // the tree's disk is full, or worse: not the URL's fault
		n.writeFailed(fmt.Errorf("spider: adding %s to the URL tree: %w", u, err))
		return
	}
	ds.remember(u, id)
	// New, or in the tree but lost by the scheduler in a crash (see
	// recover): the scheduler learns it now.
	isNew, err := n.sched.AddRedirect(id, hostKey(u), dec.Depth, hops)
	if err != nil {
		n.writeFailed(fmt.Errorf("spider: scheduler add %d (%s): %w", id, u, err))
		return
	}
	if isNew {
		n.unfinished.Add(1)
	}
	if added {
		n.st.admitted.Add(1)
	}
}

// requeue queues id again if a list dropped it (presets), and reports
// whether it did.
func (n *Node) requeue(id uint32) (bool, error) {
	again, err := n.sched.Requeue(id)
	if err != nil {
		return false, fmt.Errorf("spider: scheduler requeue %d: %w", id, err)
	}
	if again {
		n.unfinished.Add(1)
	}
	return again, nil
}

// reexpand follows the links of fetched page id again from its new,
// smaller depth d.
func (n *Node) reexpand(u string, id uint32, d uint8, outlinks map[uint32]pageLinks) {
	m, ok := outlinks[id]
	if !ok {
		// Links not seen by the writer yet: the page is not fetched, or
		// its links are on their way with its old depth, which the
		// writer lowers on arrival. Or it was fetched in an earlier run:
		// read its links back. So is a page a crash left stored but
		// unfinished (recover): its list reports it done unfetched, and
		// no links come.
		if !n.linksInStore(id) {
			return
		}
		var err error
		if m, err = n.storedLinks(id); err != nil {
			// Said only under --verbose, and counted nowhere: the
			// links were lost without a word.
			n.cfg.URLLogf("re-expanding %s: %v", u, err)
			if n.st.unreadable.Add(1) == 1 {
				n.cfg.Logf("spider: %s, found shallower, could not be read back from the store to follow its links again: %v; the summary counts such pages, 'kspider check' reports the damage", u, err)
			}
			return
		}
		outlinks[id] = m
	}
	m.depth = int(d)
	n.see(m, outlinks)
}

// hostKey is the scheduler's host name for canonical URL u: its authority
// (host[:port]) for http, "https:" and the authority for https, so that the
// URLs of one scheduler host share one origin, as a collector list must.
func hostKey(u string) string {
	rest, https := strings.CutPrefix(u, "https://")
	if !https {
		rest = strings.TrimPrefix(u, "http://")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if https {
		return "https:" + rest
	}
	return rest
}
