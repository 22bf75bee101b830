package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/links"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/storage"
)

// processList fetches one list from the scheduler and reports every id of
// it back: robots.txt first when the node has no rules for the host, then
// the allowed URLs over one connection, each page stored and its links sent
// to the writer.
func (n *Node) processList(ctx context.Context, l scheduler.List, msgs chan<- found) {
	ctx, cancel := n.listContext(ctx, l)
	defer cancel()
	fetchEnded := n.fetchStarted()
	defer fetchEnded()
	reported := 0
	report := func(id uint32, o scheduler.Outcome) {
		reported++
		n.report(id, o)
	}
	defer func() { // whatever happened, every id goes back
		for _, id := range l.IDs[min(reported, len(l.IDs)):] {
			report(id, scheduler.Outcome{Kind: scheduler.NotTried})
		}
	}()
	urls := make([]string, len(l.IDs))
	var buf []byte
	for i, id := range l.IDs {
		var err error
		if buf, err = n.tree.Get(id, buf[:0]); err != nil {
			n.fail(fmt.Errorf("spider: URL %d of the tree: %w", id, err))
			return
		}
		urls[i] = string(buf)
	}
	if ctx.Err() != nil || len(urls) == 0 || n.pagesExhausted() || n.overIPLimit(ctx, l) {
		return // (max_pages reached, or the host's address busy: the list waits, NotTried)
	}
	pre := n.presets(l.IDs, urls)
	if pre.all() { // nothing to fetch: not even robots.txt
		for i, id := range l.IDs {
			report(id, pre[i].o)
		}
		return
	}
	// The list's results are processed as they arrive (node_result.go);
	// what they leave waits here, and the records' bytes count as held
	// once they wait for their links' sync.
	lr := newListResults(n, l.IDs)
	defer lr.wait() // (early returns: before the batch's Release below)
	// robots.txt on the list's connection when the node has no rules for
	// the host (node_robots_list.go): rl.batch is then the list fetched.
	rl := n.robotsFirst(ctx, l, urls, pre, lr)
	fetched, ok := rl.fetched, rl.ok
	if rl.batch == nil {
		// Anything the robots.txt list's Each saw was dropped with it (its
		// URLs skipped while robots.txt redirected): the list is fetched
		// again below.
		lr.reset()
	}
	if !ok { // robots.txt unreachable (or the crawl stopped): everything waits
		if ctx.Err() != nil || rl.later {
			return
		}
		for i, id := range l.IDs {
			if o, ok := pre.of(i); ok { // stored before a crash: done, whatever robots.txt says now
				report(id, o)
				continue
			}
			report(id, scheduler.Outcome{Kind: scheduler.FailedTemp})
		}
		return
	}
	// Report in list order: reported counts the ids done so far, so the
	// deferred NotTried covers exactly the rest.
	var reqs []collector.Request
	var ids []int // index into l.IDs of each request
	// denied: index -> over budget, denied by no rule (robots.Rules.CheckURL)
	denied := map[int]bool{}
	for i, u := range urls {
		if pre.has(i) {
			continue
		}
		if allowed, over := rl.check(i, u); !allowed {
			denied[i] = over
			continue
		}
		reqs = append(reqs, collector.Request{ID: reqID(i), URL: u})
		ids = append(ids, i)
	}
	// max_pages: fetch only what is left of it; the rest is cut (NotTried).
	k := rl.reserved
	if rl.batch == nil {
		k = n.reserve(len(reqs))
	}
	reqs, ids = reqs[:k], ids[:k]
	storedN := 0
	defer func() { n.unreserve(k - storedN) }()
	if fetched && len(reqs) > 0 {
		// The robots.txt connection is closed; the server may not have
		// seen it yet. Wait the gap the collector keeps between a list's
		// connections, so that the host never sees two at once.
		gap := max(n.cfg.Collector.ReconnectGap, 50*time.Millisecond)
		t := time.NewTimer(gap)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	b := rl.batch
	if b == nil && len(reqs) > 0 && ctx.Err() == nil {
		b = n.coll.Fetch(ctx, &collector.List{Requests: reqs, Linger: true, Stop: n.ctl.stopping, Each: lr.each})
	}
	fetchEnded()
	if b != nil {
		// Each gave every result's buffers back as it processed it;
		// Release skips those (their buffers are nil) and returns the rest
		// (robots.txt's).
		defer n.coll.Release(b)
		defer lr.wait() // before the Release: the encoder may hold results
		n.ss.countList(l.Host, b, time.Now())
	}
	var msg found
	done, ri := 0, 0 // done: the ids of l classified, l.IDs[:done]
	for i, id := range l.IDs {
		p := &lr.res[i]
		if o, ok := pre.of(i); ok { // stored before a crash, or out of scope: not fetched
			*p = pageResult{seen: true, o: o}
			done++
			continue
		}
		if over, ok := denied[i]; ok {
			n.st.denied.Add(1)
			if over {
				n.st.deniedOverBudget.Add(1)
			}
			*p = pageResult{seen: true, o: scheduler.Outcome{Kind: scheduler.Denied}}
			done++
			continue
		}
		if b == nil || ri >= len(b.Results) || ids[ri] != i {
			break // cut: the deferred loop reports the rest NotTried
		}
		r := &b.Results[ri]
		ri++
		lr.each(r) // one Each never saw (Fetch ended before a fetcher was free)
		n.cutShort(id, r, p)
		if p.o.Kind != scheduler.FailedTemp && p.o.Kind != scheduler.NotTried { // (fetched again: keeps its count)
			n.followRedirect(id, urls[i], p.o.Kind == scheduler.Redirect, p.links)
		}
		n.count(r, p)
		if p.links != nil {
			d, _ := n.sched.Depth(id)
			p.links.depth = int(d)
			msg.pages = append(msg.pages, *p.links)
		}
		done++
	}
	// The host's connection is closed: its next list may go out (after the
	// politeness wait) while this one's pages are made durable. (Released
	// right after the fetch instead, before the links are extracted, the
	// crawl was no faster, and once the web's audit saw two connections
	// to one host.)
	if err := n.sched.Release(l.Host); err != nil {
		n.fail(fmt.Errorf("spider: scheduler release of host %d: %w", l.Host, err))
		return
	}
	// The links go to the writer first and the pages are stored once the
	// links are durable: a page that survives a crash has its links in the
	// tree and the scheduler, so after a restart it needs no fetch again.
	// The pages wait for that sync compressed (node_held.go).
	lr.wait() // the records are made (node_result.go)
	for i := range done {
		if p := &lr.res[i]; p.store && p.err != nil {
			n.fail(p.err)
			return
		}
	}
	held := lr.held
	n.held.Add(held)
	defer n.held.Add(-held)
	if len(msg.pages) > 0 {
		msg.done = make(chan struct{})
		msg.syncSoon = n.held.Load() > heldSyncBytes
		n.pending.Add(1) // before any report, so the crawl cannot look finished
		msgs <- msg
		select {
		case <-msg.done:
		case <-n.syncFailed:
			return
		}
	}
	for i, id := range l.IDs[:done] {
		p := &lr.res[i]
		if p.store {
			// Reported by the store's OnDurable (Node.durable).
			if err := n.storeResult(ctx, id, urls[i], p.enc, p.size, p.o); err != nil {
				n.fail(err)
				return
			}
			storedN++
			reported++
			continue
		}
		report(id, p.o)
	}
}

// preset is an outcome of a list's URL decided before any fetch.
type preset struct {
	o  scheduler.Outcome
	ok bool
}

// presets are a list's outcomes decided before any fetch, by index; nil
// when there are none (the common case).
type presets []preset

// presets decides what needs no fetch: a page a crash left stored
// (recover), and a URL the scope filters or the depth limit refuse now.
// They apply to links as they are found; a URL queued before the scope
// was narrowed between runs (scope.exclude for a site that asked not to
// be crawled), or limits.max_depth lowered, was fetched all the same: it
// is dropped. A dropped URL found within the limit later, or the limit
// raised again, is queued again (seeOne, raiseDepth).
func (n *Node) presets(ids []uint32, urls []string) presets {
	var p presets
	for i, id := range ids {
		o, ok := n.stored[id]
		if !ok {
			if r := n.filter.Check(urls[i]); r != scope.OK {
				n.filter.Count(r)
				n.st.rejected.Add(1)
				o, ok = scheduler.Outcome{Kind: scheduler.Dropped}, true
			} else if d, known := n.sched.Depth(id); known && int(d) > n.cfg.MaxDepth {
				n.st.tooDeep.Add(1)
				o, ok = scheduler.Outcome{Kind: scheduler.Dropped}, true
				n.deepMu.Lock()
				n.deepDrops[id] = true
				n.deepMu.Unlock()
			}
		}
		if ok {
			if p == nil {
				p = make(presets, len(ids))
			}
			p[i] = preset{o: o, ok: true}
		}
	}
	return p
}

func (p presets) of(i int) (scheduler.Outcome, bool) {
	if p == nil {
		return scheduler.Outcome{}, false
	}
	return p[i].o, p[i].ok
}

func (p presets) has(i int) bool { return p != nil && p[i].ok }

// all reports whether every URL's outcome is decided.
func (p presets) all() bool {
	for i := range p {
		if !p[i].ok {
			return false
		}
	}
	return p != nil
}

// extractLinks extracts the links to follow from a page (of depth d):
// none under a nofollow; redirect targets (Location of a 3xx) keep the
// page's depth.
func (n *Node) extractLinks(id uint32, d int, u string, body []byte, h http.Header, redirect bool) pageLinks {
	// Extractors keep their buffers between pages: a fresh one per page
	// spent 6% of the crawl's CPU growing them.
	x, _ := n.extractors.Get().(*links.Extractor)
	if x == nil {
		x = new(links.Extractor)
	}
	res, err := x.Extract(body, u, h, links.Options{Agent: n.agent, MaxLinks: n.cfg.MaxLinks})
	n.extractors.Put(x)
	if err != nil {
		n.cfg.URLLogf("links of %s: %v", u, err)
	}
	p := pageLinks{parent: id, depth: d}
	if res.NoFollow {
		return p
	}
	for _, l := range res.Links {
		// <base href> says how links resolve; it is not a link.
		if l.NoFollow || l.Element == "base" {
			continue
		}
		if redirect && l.Element == links.ElementHeader && strings.EqualFold(l.Attr, "location") {
			p.same = append(p.same, l.URL)
		} else {
			p.links = append(p.links, l.URL)
		}
	}
	return p
}

// storeResult stores the collector's faithful record of one response,
// encoded by encodePage, once the id is durable (see the durability
// order). The store's context is not the crawl's: a page fetched before an
// interruption is stored all the same.
func (n *Node) storeResult(ctx context.Context, id uint32, url string, e storage.Encoded, size int, o scheduler.Outcome) error {
	if err := n.waitSynced(id); err != nil {
		return err
	}
	n.st.bytes.Add(uint64(size))
	n.awaitMu.Lock()
	n.awaiting[id] = awaited{o: o, size: size}
	n.awaitMu.Unlock()
	if err := n.store.PutEncoded(context.WithoutCancel(ctx), e); err != nil {
		n.awaitMu.Lock()
		delete(n.awaiting, id)
		n.awaitMu.Unlock()
		n.st.bytes.Add(^uint64(size - 1))
		return fmt.Errorf("spider: storing %s (id %d): %w", url, id, err)
	}
	n.st.pages.Add(1)
	return nil
}

// report reports id's outcome to the scheduler and counts it finished if
// it is.
func (n *Node) report(id uint32, o scheduler.Outcome) {
	if err := n.sched.Report(id, o); err != nil {
		n.fail(fmt.Errorf("spider: scheduler report %d: %w", id, err))
		return
	}
	if !n.sched.URL(id).State.Unfinished() {
		n.unfinished.Add(-1)
	}
	n.deepMu.Lock()
	deep := n.deepDrops[id]
	delete(n.deepDrops, id)
	n.deepMu.Unlock()
	if !deep || o.Kind != scheduler.Dropped {
		return
	}
	// Dropped beyond the depth limit (presets), but the writer may have
	// found it within the limit since: its requeue, while the id was out,
	// did nothing, and the URL would be lost.
	if d, ok := n.sched.Depth(id); ok && int(d) <= n.cfg.MaxDepth {
		if _, err := n.requeue(id); err != nil {
			n.fail(err)
		}
	}
}

// durable is the store's OnDurable: a stored page's URL is reported to the
// scheduler only once the page is durable, so that a crash never leaves a
// URL completed without its page.
func (n *Node) durable(ids []uint64) {
	for _, id := range ids {
		n.awaitMu.Lock()
		a, ok := n.awaiting[uint32(id)]
		delete(n.awaiting, uint32(id))
		n.awaitMu.Unlock()
		if ok {
			n.st.durable.Add(1)
			n.st.durableBytes.Add(uint64(a.size))
			n.report(uint32(id), a.o)
		}
	}
	n.poke()
}

// headerLines cuts the status line and the closing blank line off a header
// block as received.
func headerLines(head []byte) []byte {
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[i+1:]
	} else {
		return nil
	}
	if bytes.HasSuffix(head, []byte("\r\n")) {
		return head[:len(head)-2]
	}
	return bytes.TrimSuffix(head, []byte("\n"))
}

// retryAfter reads a Retry-After (RFC 9110 §10.2.3): seconds, or an HTTP
// date. Read as seconds only, a date (what a server in maintenance often
// sends) and a number too long for an int both counted as none, and the
// host was asked again at the usual back-off. The scheduler caps the wait
// (MaxRetryAfter); garbage and a date past count as none.
func retryAfter(v string, now time.Time) time.Duration {
	const most = time.Duration(1<<20) * time.Second
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		s, err := strconv.Atoi(v)
		if err != nil {
			return most // more digits than an int holds
		}
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(now), 0), most)
}
