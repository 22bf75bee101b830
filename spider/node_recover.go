package spider

import (
	"errors"
	"fmt"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/storage"
)

// recover checks the scheduler against the tree and counts the unfinished
// URLs. An id the tree kept but the scheduler lost in a crash (its record
// was past the scheduler's commit, under a host that was too) is left out:
// the page that linked to it was not stored (a list's pages are stored only
// once its links are committed in both), so that page is fetched again and
// the writer adds the id again at its true depth (seeOne).
func (n *Node) recover() error {
	if n.sched.Len() > uint64(n.tree.Len()) {
		// The tree is synced before the scheduler, so this is damage.
		return fmt.Errorf("spider: the scheduler knows %d URL ids, the URL tree only %d", n.sched.Len(), n.tree.Len())
	}
	// After a crash, a page may be stored while its URL is still
	// unfinished in the scheduler (the kill came between the store's sync
	// and the scheduler's). Its links are durable already (they are synced
	// before the page is stored), so it only needs reporting.
	var rd *storage.Reader
	if !n.sched.Opened().Clean && !n.sched.Opened().Created {
		var err error
		if rd, err = storage.OpenReader(n.cfg.StorageDirs); err != nil {
			return fmt.Errorf("spider: reading the page store after a crash: %w", err)
		}
		defer rd.Close()
	}
	for id := uint32(0); uint64(id) < n.sched.Len(); id++ {
		if !n.sched.URL(id).State.Unfinished() {
			continue
		}
		n.unfinished.Add(1)
		if rd != nil {
			p, err := rd.Get(uint64(id))
			switch {
			case err == nil && n.storedAs(id, p.URL):
				n.stored[id] = storedOutcome(p.Status)
			case err == nil:
				// Not this id's page: fetched again, never taken for it.
			case !errors.Is(err, storage.ErrNotFound):
				return fmt.Errorf("spider: page of URL %d: %w", id, err)
			}
		}
	}
	if o := n.sched.Opened(); rd != nil {
		n.cfg.Logf("spider: resuming after an unclean stop: %d pages stored but unreported (not fetched again), %d URLs the crash lost (added again when found), %d hosts' page budgets recounted",
			len(n.stored), o.Dropped, o.PagesTrimmed+o.PagesRaised)
	}
	n.syncedLen = n.tree.Len()
	n.recovered = true
	return nil
}

// closeSched closes the scheduler, with its clean mark only once what an
// unclean stop left is settled: recover has run and every page it found
// stored but unreported has been reported (its list handed out). Marked
// clean before, the next start, seeing a clean close, looked in the store
// for nothing and fetched and stored those pages again: a run that
// recovered after a kill -9 and was drained or stopped before their lists
// came up (the soak's steered rounds), or a start refused after the
// scheduler opened (a config error fixed and the node started again).
func (n *Node) closeSched() error {
	if n.settled() {
		return n.sched.Close()
	}
	return n.sched.CloseUnclean()
}

// settled reports whether the scheduler holds everything an unclean stop
// before this run left unsaid (see closeSched).
func (n *Node) settled() bool {
	if o := n.sched.Opened(); o.Clean || o.Created {
		return true
	}
	if !n.recovered {
		return false
	}
	for id := range n.stored {
		if n.sched.URL(id).State.Unfinished() {
			return false
		}
	}
	return true
}

// linksInStore reports whether id's page, and so its links, can be read
// back from the store: it is durable (completed or redirected), in this
// run or an earlier one, or a crash left it stored but unfinished.
func (n *Node) linksInStore(id uint32) bool {
	st := n.sched.URL(id).State
	return st == scheduler.Completed || st == scheduler.Redirected || n.wasStored(id)
}

// wasStored reports whether id is a page a crash left stored but
// unfinished (recover): done, not fetched again.
func (n *Node) wasStored(id uint32) bool {
	_, ok := n.stored[id]
	return ok
}

// storedOutcome is the outcome of a response stored with status: a
// redirect, or a fetched page. classify gives it to the responses it
// stores, and recover to a page a crash left stored but unfinished, so a
// redirect stays a redirect, with its status.
func storedOutcome(status int) scheduler.Outcome {
	if status/100 == 3 {
		return scheduler.Outcome{Kind: scheduler.Redirect, Status: status}
	}
	return scheduler.Outcome{Kind: scheduler.Fetched, Status: status}
}

// storedAs reports whether a page stored under id with URL u is id's: a
// store written by another crawl (checkNewTreeStore catches the common
// case) or damaged could hold another URL's page under the id.
func (n *Node) storedAs(id uint32, u string) bool {
	want, err := n.tree.Get(id, nil)
	if err == nil && string(want) == u {
		return true
	}
	n.cfg.Logf("spider: the page store holds %q under URL id %d, which the URL tree has as %q: fetching it again", u, id, want)
	return false
}
