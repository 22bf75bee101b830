package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/scope"
)

// A link beyond limits.max_depth is dropped, not kept, and the page it is
// on is done: a run with a higher limit found every page done and
// "finished" with nothing fetched. So the limit a data directory was
// crawled to is kept in DIR/DEPTH, and a run with a higher one first
// follows again the links of the pages fetched at the old limit and
// deeper, read back from the store, and queues again the URLs a run at a
// lowered limit dropped (presets, node_process.go).
// The new limit is recorded once the URLs that adds are durable: a crash
// before follows them again. A directory that holds a crawl but no DEPTH
// (deleted as a damage message advises, or crawled before the file) was
// taken as crawled to the run's limit, and a limit raised since skipped
// the pass: now the pass is made over every stored page, said on stderr.
//
// On disk, DIR/DEPTH (version 1) is three lines of text:
//
//	kspider depth limit 1
//	max_depth 3
//	crc32c 1a2b3c4d
//
// The CRC-32C (Castagnoli) covers the two lines before it. It is written
// to a temporary name, fsynced and renamed (writeDirFile).

// DepthFile is the name of the depth limit's file in a data directory.
const DepthFile = "DEPTH"

func encodeDepthLimit(d int) []byte {
	body := fmt.Appendf(nil, "kspider depth limit 1\nmax_depth %d\n", d)
	return append(body, dirFileSum(body)...)
}

// readDepthLimit reads dir's DEPTH; the error matches fs.ErrNotExist
// when there is none, and names the file when it is damaged.
func readDepthLimit(dir string) (int, error) {
	path := filepath.Join(dir, DepthFile)
	b, err := readDirFile(dir, DepthFile, 255)
	if errors.Is(err, errNotRegular) {
		return 0, fmt.Errorf("spider: %s is %v: delete it, and the next run follows the stored pages' links again in full", path, err)
	}
	if err != nil {
		return 0, err
	}
	if err := dirFileNewer(path, b, "kspider depth limit ", 1); err != nil {
		return 0, fmt.Errorf("spider: %w", err)
	}
	var d int
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) == 4 {
		_, err = fmt.Sscanf(string(lines[1]), "max_depth %d\n", &d)
	}
	if len(lines) != 4 || err != nil || d < 0 || !bytes.Equal(encodeDepthLimit(d), b) {
		return 0, fmt.Errorf("spider: %s is damaged (%d bytes, not as kspider writes it): delete it, and the next run follows the stored pages' links again in full", path, len(b))
	}
	return d, nil
}

// CheckDepthFile reads dir's DEPTH as a node's start does, for kspider
// check: the limit the directory was crawled to, or the error the start
// refuses it with (matching fs.ErrNotExist when there is none).
func CheckDepthFile(dir string) (int, error) { return readDepthLimit(dir) }

// openDepthLimit compares the depth limit the directory was crawled to
// with this run's: a higher one sets n.raiseFrom, for Run; otherwise the
// new limit is to be recorded at once (the record returned, which OpenNode
// writes once the start can no longer be refused).
func (n *Node) openDepthLimit() (dirRecord, error) {
	n.raiseFrom = -1
	now := dirRecord{DepthFile, encodeDepthLimit(n.cfg.MaxDepth)}
	prev, err := readDepthLimit(n.cfg.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && n.freshDir:
		return now, nil
	case errors.Is(err, fs.ErrNotExist):
		// Taken as crawled to this limit, a limit raised since skipped
		// the pass and the deeper pages silently: a full pass instead,
		// recorded once made.
		n.pastUnknown = append(n.pastUnknown, DepthFile)
		n.raiseFrom = 0
		return dirRecord{}, nil
	case err != nil:
		return dirRecord{}, err
	case prev == n.cfg.MaxDepth:
		return dirRecord{}, nil
	case prev > n.cfg.MaxDepth:
		n.cfg.Logf("spider: limits.max_depth lowered from %d to %d: URLs queued deeper before are dropped unfetched (counted too deep), and queued again if the limit is raised", prev, n.cfg.MaxDepth)
		return now, nil
	}
	n.raiseFrom = prev
	return dirRecord{}, nil
}

// raiseDepth follows again, from their depths, the links of the pages
// fetched at depth raiseFrom and deeper, below the new limit: those
// links were beyond the old one. And it queues again the URLs a run at
// the old limit dropped, queued before it was lowered (presets): found
// again at their depth they are nothing new. With the scope changed
// (node_scopechange.go) it does so for every page and every URL dropped.
// The writer calls it, first. A pass over a large store takes long: the
// end of ctx (a Ctrl-C), or a Drain, cuts it short, else the interrupted
// or drained crawl waited for it to end (the drain, asked for to stop the
// node soon, for as long as the pass took: hours on a large store); the
// next run makes it again.
// passProgressEvery is how often raiseDepth's pass says where it is.
const passProgressEvery = 10 * time.Second

func (n *Node) raiseDepth(ctx context.Context, outlinks map[uint32]pageLinks) {
	pages, again, unread := 0, 0, 0
	var firstErr error
	from, dropped := n.raiseFrom, n.raiseFrom+1 // the depths of the pages, and of the URLs dropped
	if n.scopeChanged || len(n.pastUnknown) > 0 {
		from, dropped = 0, 0
	}
	end := n.sched.Len() // (the loop adds URLs)
	// On a large store the pass takes a while before anything is
	// fetched: said at its start and every passProgressEvery.
	why := fmt.Sprintf("limits.max_depth raised from %d to %d", n.raiseFrom, n.cfg.MaxDepth)
	if n.scopeChanged {
		why = "the scope changed"
	}
	if len(n.pastUnknown) > 0 {
		why = fmt.Sprintf("%s missing in %s, which holds a crawl (deleted, or from before the file): the depth limit or scope it was crawled to unknown", strings.Join(n.pastUnknown, " and "), n.cfg.Dir)
	}
	n.cfg.Logf("spider: %s: following the links of the stored pages again, a pass over %d URLs before anything is fetched", why, end)
	next := time.Now().Add(passProgressEvery)
	for id := uint32(0); uint64(id) < end; id++ {
		if id%64 == 0 && time.Now().After(next) {
			n.cfg.Logf("spider: %s: the pass is at URL %d of %d, %d pages' links followed again", why, id, end, pages)
			next = time.Now().Add(passProgressEvery)
		}
		if id%64 == 0 && (ctx.Err() != nil || n.draining()) {
			n.raiseCut.Store(true)
			n.cfg.Logf("spider: the pass following the stored pages' links again (limits.max_depth raised or the scope changed) stopped by the interruption or the drain at URL %d of %d, after %d pages: the next run makes it again", id, end, pages)
			return
		}
		if u := n.sched.URL(id); u.State == scheduler.Filtered && int(u.Depth) >= dropped && int(u.Depth) <= n.cfg.MaxDepth {
			if n.requeueDropped(id) {
				again++
			}
			continue
		}
		d, ok := n.sched.Depth(id)
		if !ok || int(d) < from || int(d) >= n.cfg.MaxDepth || !n.linksInStore(id) {
			continue
		}
		m, err := n.storedLinks(id)
		if err != nil {
			// A damaged record, say: said, counted, but only under
			// --verbose it was, and the pass recorded done all the same.
			n.cfg.URLLogf("following the links of URL %d again: %v", id, err)
			if unread == 0 {
				firstErr = err
			}
			unread++
			n.st.unreadable.Add(1)
			continue
		}
		m.depth = int(d)
		n.see(m, outlinks)
		pages++
	}
	if unread > 0 {
		n.cfg.Logf("spider: %d stored pages could not be read back, their links not followed again (first: %v); 'kspider check' reports the store's damage", unread, firstErr)
	}
	switch {
	case len(n.pastUnknown) > 0:
		n.cfg.Logf("spider: %s: the links of %d pages followed again, %d URLs dropped unfetched queued again", why, pages, again)
	case n.scopeChanged:
		n.cfg.Logf("spider: the scope changed since the directory was last crawled: the links of %d pages followed again, %d URLs dropped unfetched queued again", pages, again)
	default:
		n.cfg.Logf("spider: limits.max_depth raised from %d to %d: the links of %d pages fetched at depth %d or deeper followed again, %d URLs dropped at the old limit queued again",
			n.raiseFrom, n.cfg.MaxDepth, pages, n.raiseFrom, again)
	}
}

// requeueDropped queues id, dropped unfetched, again if the scope admits
// its URL (it may have been dropped for the scope).
func (n *Node) requeueDropped(id uint32) bool {
	u, err := n.tree.Get(id, nil)
	if err != nil {
		n.writeFailed(fmt.Errorf("spider: reading URL %d from the tree: %w", id, err))
		return false
	}
	if n.filter.Check(string(u)) != scope.OK {
		return false
	}
	again, err := n.requeue(id)
	if err != nil {
		n.writeFailed(fmt.Errorf("%w (%s)", err, u))
	}
	return again
}

// recordRaise records the raised limit, and the changed scope, once done
// (the sync that made raiseDepth's additions durable) is closed; nothing
// if the crawl's syncs failed first.
func (n *Node) recordRaise(done <-chan struct{}) {
	select {
	case <-done:
	case <-n.syncFailed:
		return
	}
	if n.raiseCut.Load() {
		return
	}
	if n.raiseFrom >= 0 {
		if err := writeDirFile(n.cfg.Dir, DepthFile, encodeDepthLimit(n.cfg.MaxDepth)); err != nil {
			n.fail(err)
			return
		}
	}
	if n.scopeChanged {
		if err := writeDirFile(n.cfg.Dir, ScopeFile, encodeScope(scopeOf(*n.cfg.Scope, n.cfg.MaxLinks))); err != nil {
			n.fail(err)
		}
	}
}
