package spider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
)

// nodeRobots is the node's robots.txt: a robots.Source (cache, TTL,
// back-off after failures, the stale-copy rule) whose fetches go through
// the collector, each hop of a redirect chain (up to 5, RFC 9309
// §2.3.1.2) a list of its own, closed lingering, after the reconnect gap.
// A host's first robots.txt usually comes on its list's own connection
// instead (robotsFirst, node_robots_list.go), handed to the Source primed.
// The cache is in memory: after a restart each host's robots.txt is
// fetched again.
type nodeRobots struct {
	src *robots.Source

	mu        sync.Mutex
	connected map[string]time.Time // origin -> when its last robots.txt connection closed, for chains under way
}

// robotsChain is what one robotsVerdictFor's fetch did, carried to
// robotsDoer in the context (robotsChainKey): each hop's origin and the
// time its connection closed, as set in nodeRobots.connected. The chain
// takes its entries out when it ends (those no later chain has set since):
// kept for good, an entry per redirect target on another host made the map
// grow with every distinct target a hostile web named. Hops are sequential.
type robotsChain struct {
	hops []robotsHop // at most one per hop: 5 redirects and the first
}

type robotsHop struct {
	origin string
	closed time.Time
}

type robotsChainKey struct{}

// closedNow records that origin's robots.txt connection of chain c closed
// now.
func (r *nodeRobots) closedNow(c *robotsChain, origin string) {
	if c == nil {
		return // not a robotsVerdictFor fetch: nothing would take it out
	}
	now := time.Now()
	r.mu.Lock()
	r.connected[origin] = now
	r.mu.Unlock()
	c.hops = append(c.hops, robotsHop{origin, now})
}

// endChain takes chain c's entries out of connected, and says whether c
// fetched origin's robots.txt.
func (r *nodeRobots) endChain(c *robotsChain, origin string) (fetched bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range c.hops {
		fetched = fetched || h.origin == origin
		if t, ok := r.connected[h.origin]; ok && t.Equal(h.closed) {
			delete(r.connected, h.origin)
		}
	}
	return fetched
}

// robotsCacheOrigins bounds the origins whose rules are cached; an evicted
// origin's robots.txt is fetched again.
const robotsCacheOrigins = 1 << 20

func newNodeRobots(n *Node) nodeRobots {
	retryMin := n.cfg.Scheduler.ErrorDelay
	if retryMin <= 0 {
		retryMin = 10 * time.Second
	}
	retryMax := n.cfg.Scheduler.MaxBackoff
	if retryMax <= 0 {
		retryMax = time.Hour
	}
	return nodeRobots{
		src: &robots.Source{
			Fetcher: &robots.Fetcher{Client: robotsDoer{n}, UserAgent: n.cfg.UserAgent},
			Cache:   robots.NewCache(robotsCacheOrigins, robots.DefaultTTL),
			TTL:     n.cfg.RobotsTTL,
			// An unreachable robots.txt is asked again about when the
			// scheduler hands the host's list out again.
			RetryMin: retryMin, RetryMax: max(retryMin, retryMax),
			StaleFor: n.cfg.RobotsStaleFor,
		},
		connected: map[string]time.Time{},
	}
}

// rulesFor returns host h's robots.txt rules for URL u's origin, and
// records the status and Crawl-delay in the scheduler when robots.txt was
// fetched (on a connection of its own, or primed: read on the list's, see
// robotsDoer). fetched: robots.txt was fetched; !ok: robots.txt
// is unreachable (and no earlier copy may stand in for it), nothing may be
// fetched for now.
func (n *Node) rulesFor(ctx context.Context, h uint32, u string) (r *robots.Rules, fetched, ok bool) {
	v := n.robotsVerdictFor(ctx, u)
	return v.rules, v.fetched, n.recordRobots(h, v)
}

// robotsVerdict is what the node's robots.Source said of an origin, before
// the scheduler hears of it (recordRobots).
type robotsVerdict struct {
	origin   string
	rules    *robots.Rules // nil when !ok
	fetched  bool          // robots.txt was fetched for this answer
	ok       bool          // false: unreachable with no copy to use, or ctx ended
	failures int           // consecutive unreachable fetches
}

// robotsVerdictFor asks the Source for URL u's origin. It touches memory
// only (and the network when the Source fetches): the robots hook calls it
// while the list's connection is open.
func (n *Node) robotsVerdictFor(ctx context.Context, u string) robotsVerdict {
	v := robotsVerdict{origin: robots.OriginOf(u)}
	chain := &robotsChain{}
	v.rules = n.robots.src.Rules(context.WithValue(ctx, robotsChainKey{}, chain), v.origin)
	// The list's own origin: processList waits the gap after it.
	v.fetched = n.robots.endChain(chain, v.origin)
	if ctx.Err() != nil && v.rules == robots.DisallowAll() {
		// Abandoned (or unreachable, which an ended context cannot
		// tell): nothing learnt. An answer that came whole before the
		// end is the Source's, cached: recorded as any other.
		v.rules = nil
		return v
	}
	// The failure count is for the log only: the origin may have been
	// evicted since Rules (count 0), and its DisallowAll taken for a
	// fetched file's rules denied the list's URLs instead of waiting.
	_, v.failures = n.robots.src.Cache.ID(v.origin)
	if v.rules == robots.DisallowAll() && v.origin != "" {
		// Unreachable, with no copy to use: the list waits (the Source's
		// own DisallowAll says "not now", not "never"; no fetched file
		// shares it since acf604d).
		v.rules, v.failures = nil, max(v.failures, 1)
		return v
	}
	v.ok = true
	return v
}

// recordRobots tells the scheduler (status, Crawl-delay) and the counters
// what a fetched robots.txt gave, and returns v.ok.
func (n *Node) recordRobots(h uint32, v robotsVerdict) bool {
	if !v.fetched || v.rules == nil && v.failures == 0 {
		return v.ok // nothing fetched, or the crawl stopped
	}
	if !v.ok {
		n.st.errors.Add(1)
		n.cfg.URLLogf("robots.txt of %s unreachable (%d times running)", v.origin, v.failures)
		if err := n.sched.SetRobots(h, scheduler.RobotsUnreachable, 0); err != nil {
			n.fail(err)
		}
		return false
	}
	st := scheduler.RobotsOK
	if v.rules == robots.AllowAll() {
		st = scheduler.RobotsNone // 4xx, too many redirects
	}
	if v.failures > 0 {
		n.cfg.URLLogf("robots.txt of %s unreachable: using the copy fetched before", v.origin)
	}
	if err := n.sched.SetRobots(h, st, v.rules.CrawlDelay); err != nil {
		n.fail(err)
	}
	return true
}

// robotsGap waits, before the next hop of a robots.txt redirect chain,
// until the gap the collector keeps between a host's connections has passed
// since the origin's last robots.txt connection closed. False when ctx
// ended first.
func (n *Node) robotsGap(ctx context.Context, origin string) bool {
	n.robots.mu.Lock()
	closed, ok := n.robots.connected[origin]
	n.robots.mu.Unlock()
	if !ok {
		return true
	}
	wait := max(n.cfg.Collector.ReconnectGap, 50*time.Millisecond) - time.Since(closed)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// robotsDoer is the robots.Fetcher's client: one request, one collector
// list. It does not follow redirects (the Fetcher does). A request whose
// context carries a primedRobots is answered, once, from the robots.txt
// response the collector already read on a list's connection
// (node_robots_list.go), with no fetch.
type robotsDoer struct{ n *Node }

func (d robotsDoer) Do(req *http.Request) (*http.Response, error) {
	n := d.n
	u := req.URL.String()
	origin := robots.OriginOf(u)
	chain, _ := req.Context().Value(robotsChainKey{}).(*robotsChain)
	if p, _ := req.Context().Value(primedKey{}).(*primedRobots); p != nil && !p.used {
		// The first hop, robots.txt of the list's origin, came on the
		// list's connection. Recorded as a fetch (rulesFor's "fetched")
		// and as a close now: a redirect hop to the same origin waits the
		// gap after it.
		p.used = true
		n.robots.closedNow(chain, origin)
		if p.err != nil {
			return nil, p.err
		}
		resp := *p.resp
		resp.Body, resp.Request = io.NopCloser(bytes.NewReader(p.body)), req
		return &resp, nil
	}
	// A redirect to the same origin opens its next connection only after
	// the gap.
	if !n.robotsGap(req.Context(), origin) {
		return nil, fmt.Errorf("%w: %w", robots.ErrNotSent, req.Context().Err())
	}
	b := n.coll.Fetch(req.Context(), &collector.List{Requests: []collector.Request{{URL: u}}, Linger: true})
	defer n.coll.Release(b)
	n.robots.closedNow(chain, origin)
	n.outOfFiles(&b.Results[0])
	if r := &b.Results[0]; r.Kind == collector.NotTried && r.Attempts == 0 {
		// The context ended before it went out (the Source does not
		// count it abandoned: nothing was lost).
		return nil, fmt.Errorf("%w: %s: %v", robots.ErrNotSent, u, r.Kind)
	}
	p := primeRobots(&b.Results[0])
	if p.err != nil {
		return nil, p.err
	}
	p.resp.Body, p.resp.Request = io.NopCloser(bytes.NewReader(p.body)), req
	return p.resp, nil
}

// primedRobots is a robots.txt response (or the error it amounts to) the
// collector read on a list's connection, for robotsDoer to hand the
// robots.Fetcher instead of fetching it. Its context key is primedKey.
type primedRobots struct {
	resp *http.Response // without Body and Request
	body []byte
	err  error
	used bool
}

type primedKey struct{}

// primeRobots turns the collector's robots.txt result into what the
// robots.Fetcher reads, copied out of the collector's buffers.
func primeRobots(r *collector.Result) *primedRobots {
	switch {
	case r.Status == 0:
		return &primedRobots{err: fmt.Errorf("%s: %v: %v", r.URL, r.Kind, r.Err)}
	case r.Status == 429:
		// Too many requests: unreachable for now, not "no robots.txt".
		return &primedRobots{err: fmt.Errorf("%s: status 429", r.URL)}
	case r.Status/100 == 2 && r.Kind != collector.OK && r.Kind != collector.TooLarge:
		// A body cut short is not the file (RFC 9309 §2.3.1.4 would have
		// us parse what came; a cut file may lose its Disallow lines).
		return &primedRobots{err: fmt.Errorf("%s: %v: %v", r.URL, r.Kind, r.Err)}
	case r.Status/100 == 2 && r.Kind == collector.TooLarge && len(r.Body) == 0 && len(r.WireBody) > 0:
		// Too large before a byte decoded (a zstd frame asking for a
		// window or a size past the cap): none of the file, not a file
		// without rules, which would allow everything.
		return &primedRobots{err: fmt.Errorf("%s: %v: %v", r.URL, r.Kind, r.Err)}
	}
	return &primedRobots{resp: &http.Response{StatusCode: r.Status, Status: http.StatusText(r.Status), Header: r.Header.Clone()},
		body: bytes.Clone(r.Body)}
}
