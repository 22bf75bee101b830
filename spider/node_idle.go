package spider

import "time"

// While lists are fetched the node batches its syncs: the writer syncs the
// tree and the scheduler every SyncInterval, the store's savers sync every
// storage SyncInterval, so that one fdatasync covers many pages. Once no
// list has been fetching for idleAfter, no new page is likely soon, and
// waiting out those intervals only delays the pages already fetched (on a
// small crawl, its end by up to 200 ms). Then the writer syncs at once and
// the store syncs as soon as its input is empty (storage.Store.SyncWhenIdle),
// until a list starts fetching again.
//
// idleAfter is well above the gap between two lists of one host (under a
// millisecond on loopback, a few on a loaded machine), so that a one-host
// crawl does not sync between every two lists.
const idleAfter = 20 * time.Millisecond

// soloMaxWait is how long the scheduler of a node on SoloClock waits, with
// no timer due and nothing added, before it looks again. Its clock is the
// system clock, on which the scheduler's own timers (politeness, retries,
// the slot's end) run, so looking again mostly finds nothing new: the
// scheduler's default (100 ms, for clocks tests move) woke an idle node
// ten times a second, each wake-up a few context switches and a sysmon
// round. Not longer than a second (as clusterMaxWait): a look that ends
// its scan budget before the end of the window finds the rest at the next
// one, and a wall clock stepped back is noticed as late.
const soloMaxWait = time.Second

// fetchStarted counts a list as fetching and returns the function that
// ends it (idempotent, so that a deferred call is harmless).
//
// A cluster node keeps to its intervals: its writer syncs on its ticker
// only (clusterSyncInterval), so the pause would only make its store sync
// early, and the timer armed at every pause (a node a quarter as busy
// pauses often) woke it once more each time.
func (n *Node) fetchStarted() (ended func()) {
	if n.cl != nil {
		return func() {}
	}
	n.fetchMu.Lock()
	n.fetching++
	if n.fetching == 1 {
		n.fetchGen++
		n.idleSync.Store(false)
		n.store.SyncWhenIdle(false)
	}
	n.fetchMu.Unlock()
	done := false
	return func() {
		if done {
			return
		}
		done = true
		n.fetchMu.Lock()
		defer n.fetchMu.Unlock()
		n.fetching--
		if n.fetching > 0 {
			return
		}
		gen := n.fetchGen
		time.AfterFunc(idleAfter, func() { n.fetchQuiet(gen) })
	}
}

// fetchQuiet switches to syncing at once if no list has started fetching
// since generation gen ended.
func (n *Node) fetchQuiet(gen uint64) {
	n.fetchMu.Lock()
	quiet := n.fetching == 0 && n.fetchGen == gen
	if quiet {
		n.idleSync.Store(true)
		n.store.SyncWhenIdle(true)
	}
	n.fetchMu.Unlock()
	if quiet {
		select {
		case n.fetchIdle <- struct{}{}:
		default:
		}
	}
}
