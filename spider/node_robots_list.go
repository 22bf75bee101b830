package spider

import (
	"cmp"
	"context"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
)

// robots.txt on the list's own connection.
//
// A host whose rules the node does not hold (a new host, rules past their
// TTL, a restart) gets robots.txt and its list over ONE connection: the
// list goes to the collector with List.Robots, and List.AfterRobots
// (robotsHook), called on the fetcher's goroutine once the robots.txt
// response is read and before any of the list's requests is sent, hands
// that response to the node's robots.Source (through robotsDoer, primed:
// no second fetch) and so caches it, records status and Crawl-delay in the
// scheduler, and applies the stale-copy rule exactly as rulesFor does; it
// skips the URLs the rules disallow (the collector never sends them;
// they are reported Denied). Before, robots.txt took a connection of its
// own and the list waited the reconnect gap (50 ms) for a second one.
//
// Where the hook cannot decide at once, the list is not sent:
//
//   - robots.txt redirects (3xx): the chain is followed as before (each
//     hop a list of its own, after the gap; the first hop's answer is the
//     one already read, not asked again), then the list is fetched on a
//     connection of its own after the gap (today's path);
//   - the rules' Crawl-delay (capped at MaxCrawlDelay) is longer than the
//     politeness delay: the robots.txt visit counts as the host's list, so
//     every URL is reported NotTried and the scheduler hands the list out
//     again after its TIMEWAIT, which the Crawl-delay now sets; the rules
//     are cached by then;
//   - robots.txt unreachable (5xx, 429, a connection failure, a body cut
//     short or of which nothing decoded) with no stale copy to use: every URL is reported FailedTemp,
//     as before; with a stale copy the list goes on under it;
//   - the crawl stopping (context cancelled): the URLs come back
//     NotTried; a robots.txt read whole (an answer, not a redirect) is
//     cached and recorded all the same, and one cut short records nothing
//     (the fetch counts in Source.Abandoned, as one on a connection of
//     its own);
//   - a gentle stop (List.Stop) before robots.txt was sent, the context
//     still live for StopGrace: robots.txt comes back NotTried, which says
//     nothing of the host; nothing is recorded (no back-off, no
//     "unreachable"), the URLs come back NotTried, no retry spent.
//
// A robots.txt body is read up to robots.DefaultMaxSize+1 bytes
// (List.RobotsMaxBody), what robots.ParseLimit needs; a longer one is cut
// there, its connection closed, and the list goes on over a new one after
// the gap.

// robotsList is what robotsFirst found for a list.
type robotsList struct {
	rules    *robots.Rules
	fetched  bool // robots.txt came on a connection of its own: wait the gap
	ok       bool // false: robots.txt unreachable, or the crawl stopped
	later    bool // report the list NotTried: it goes out after TIMEWAIT
	batch    *collector.Batch
	reserved int // max_pages reserved for batch's fetches (its results)
	// checked holds, by URL index, the hook's check of the URLs it saw
	// against rules (nil: none): a hostile robots.txt's check costs up to
	// its budget, which a second check of the same URL paid again.
	checked []robotsCheck
}

// robotsCheck is one URL's check against a list's rules.
type robotsCheck uint8

const (
	notChecked robotsCheck = iota
	checkAllowed
	checkDenied
	checkOverBudget // denied: the check ran out of its budget
)

// check returns what the rules say of URL i (u) of the list: the hook's
// answer when it checked u, or the rules' now.
func (rl *robotsList) check(i int, u string) (allowed, overBudget bool) {
	if i < len(rl.checked) && rl.checked[i] != notChecked {
		return rl.checked[i] == checkAllowed, rl.checked[i] == checkOverBudget
	}
	return rl.rules.CheckURL(u)
}

// robotsFirst returns the rules for list l (urls, its URLs) and, when the
// node held none for its origin, the batch of the list fetched after
// robots.txt on one connection: only allowed, not stored URLs, in list
// order, as many as max_pages allowed (reserved), each result processed by
// lr as it arrived (node_result.go). batch nil: fetch the list as before.
func (n *Node) robotsFirst(ctx context.Context, l scheduler.List, urls []string, pre presets, lr *listResults) robotsList {
	origin := robots.OriginOf(urls[0])
	if _, fresh := n.robots.src.Cache.Get(origin, time.Now()); fresh {
		return n.robotsSeparate(ctx, l, urls)
	}
	var reqs []collector.Request
	for i, u := range urls {
		if !pre.has(i) { // (stored before a crash, or out of scope)
			reqs = append(reqs, collector.Request{ID: reqID(i), URL: u})
		}
	}
	k := n.reserve(len(reqs))
	if k == 0 {
		return n.robotsSeparate(ctx, l, urls)
	}
	reqs = reqs[:k]
	// The hook runs while the list's connection is open: it reads memory
	// only. The scheduler (its lock may wait on a sync) hears of robots.txt
	// once Fetch is back, the connection closed: a slow hook would keep it
	// open, past a cluster slot's end.
	crawlCap := cmp.Or(n.cfg.Scheduler.MaxCrawlDelay, 60*time.Second) // the scheduler's default cap
	h := &robotsHook{n: n, ctx: ctx, url: urls[0], reqs: reqs, nURLs: len(urls), minDelay: n.sched.MinDelay(), crawlCap: crawlCap}
	b := n.coll.Fetch(ctx, &collector.List{Requests: reqs, Robots: true, AfterRobots: h.after,
		RobotsMaxBody: robots.DefaultMaxSize + 1, Linger: true, Stop: n.ctl.stopping, Each: lr.each})
	drop := func() { // what lr made of the results is dropped with them
		lr.wait()
		n.unreserve(k)
		n.coll.Release(b)
	}
	if h.called && h.redirect == nil && !h.unsent && !n.recordRobots(l.Host, h.verdict) && ctx.Err() == nil {
		drop()
		return robotsList{}
	}
	switch {
	case ctx.Err() != nil:
		drop()
		return robotsList{}
	case h.redirect != nil:
		drop()
		rules, fetched, ok := n.rulesFor(context.WithValue(ctx, primedKey{}, h.redirect), l.Host, urls[0])
		return robotsList{rules: rules, fetched: fetched, ok: ok}
	case h.later || h.unsent:
		drop()
		return robotsList{later: true}
	case !h.called:
		// No URL of the list parsed: the collector sent nothing, and
		// every result says why (BadURL).
		h.verdict.rules = robots.AllowAll()
	}
	// The skipped (disallowed) results leave the batch: it then lines up
	// with processList's allowed, not stored URLs. The encoder holds
	// pointers into the batch until it is done.
	lr.wait()
	m := 0
	for i := range b.Results {
		if b.Results[i].Kind != collector.Skipped {
			b.Results[m] = b.Results[i]
			m++
		}
	}
	clear(b.Results[m:])
	b.Results = b.Results[:m]
	n.unreserve(k - m)
	return robotsList{rules: h.verdict.rules, ok: true, batch: b, reserved: m, checked: h.checked}
}

// robotsSeparate is the path for a host whose rules the node holds (or
// that has nothing left to fetch): rulesFor, which fetches robots.txt on a
// connection of its own when needed.
func (n *Node) robotsSeparate(ctx context.Context, l scheduler.List, urls []string) robotsList {
	rules, fetched, ok := n.rulesFor(ctx, l.Host, urls[0])
	return robotsList{rules: rules, fetched: fetched, ok: ok}
}

// robotsHook is one list's List.AfterRobots and what it decided.
type robotsHook struct {
	n                  *Node
	ctx                context.Context
	url                string // the list's first URL
	reqs               []collector.Request
	nURLs              int           // the list's URLs
	minDelay, crawlCap time.Duration // the politeness delay, the Crawl-delay cap

	called   bool
	verdict  robotsVerdict // for recordRobots once the connection is closed
	later    bool
	unsent   bool          // robots.txt never sent (a gentle stop): nothing learnt
	redirect *primedRobots // robots.txt redirects: followed after the list
	checked  []robotsCheck // by URL index: reqs checked against verdict.rules
}

// after is List.AfterRobots: it runs on the collector's fetcher goroutine
// (processList's, inside Fetch) while the connection is open, so it
// touches memory only.
func (h *robotsHook) after(r *collector.Result) []bool {
	h.called = true
	h.n.outOfFiles(r) // (memory only: it cancels the crawl's context)
	all := func() []bool {
		skip := make([]bool, len(h.reqs))
		for i := range skip {
			skip[i] = true
		}
		return skip
	}
	if h.ctx.Err() != nil && (r.Kind == collector.Canceled || r.Kind == collector.NotTried || r.Status/100 == 3) {
		// The crawl stops or the slot ended, robots.txt not read whole
		// (or a redirect, not followed now): nothing learnt. Handed to
		// the Source all the same, so that its Abandoned counts this
		// fetch as it counts one on a connection of its own, unless it
		// never went out (the end came while the connection was made):
		// that lost nothing. One read whole goes on below: it is the
		// host's answer, cached and recorded; thrown away, it was
		// fetched again at the next list.
		if r.Attempts > 0 {
			h.n.robotsVerdictFor(context.WithValue(h.ctx, primedKey{}, &primedRobots{err: h.ctx.Err()}), h.url)
		}
		return all()
	}
	if r.Kind == collector.NotTried {
		// The list stopped (List.Stop) before robots.txt went out. Taken
		// for an unreachable one, it set the host's back-off and spent a
		// retry of each URL at every stop: stops in a row lost pages.
		h.unsent = true
		return all()
	}
	p := primeRobots(r)
	if p.err == nil && r.Status/100 == 3 {
		h.redirect = p
		return all()
	}
	h.verdict = h.n.robotsVerdictFor(context.WithValue(h.ctx, primedKey{}, p), h.url)
	if !h.verdict.ok {
		return all()
	}
	rules := h.verdict.rules
	if min(rules.CrawlDelay, h.crawlCap) > h.minDelay {
		h.later = true
		return all()
	}
	skip := make([]bool, len(h.reqs))
	h.checked = make([]robotsCheck, h.nURLs)
	for i, rq := range h.reqs {
		allowed, over := rules.CheckURL(rq.URL)
		skip[i] = !allowed
		c := checkAllowed
		if over {
			c = checkOverBudget
		} else if !allowed {
			c = checkDenied
		}
		h.checked[rq.ID-1] = c // (reqID)
	}
	return skip
}
