package spider

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/spider/scope"
)

// budgets are the node's crawl limits that need state surviving restarts:
//
//   - the per-host page budget (scope.Config.MaxPagesPerHost, which is
//     limits.max_pages_per_host): the URLs admitted per scheduler host
//     (origin) are counted in the scheduler's persistent host table
//     (Scheduler.AdmitPage);
//   - the per-domain host budget (scope.Config.MaxSubdomains): the origins
//     per registrable domain, counted from the host table at open and kept
//     up to date by the writer;
//   - max_pages (NodeConfig.MaxPages): pages fetched in all runs, counted
//     at open from the scheduler's completed and redirected URLs and the
//     pages a crash left stored but unreported (recover); lists
//     reserve fetches against it before they go out, so it is never passed.
//
// In a cluster of N nodes the limits are the cluster's: each node counts
// only its own share of the URLs, so it takes 1/N of max_pages (rounded
// up) and, when URLs are partitioned by URL (a host's spread over every
// node), 1/N of the per-host budget. Taken whole by each node, they let
// the cluster store N times the pages the operator asked for, and a trap
// host N times its budget. The per-domain host budget stays whole: with
// URL partitioning every node sees nearly every origin of a domain, and
// with host partitioning a domain's origins fall to the nodes unevenly.
type budgets struct {
	perHost   uint32         // 0: none
	perDomain int            // 0: none
	domains   map[string]int // registrable domain -> origins; the writer's

	pagesLeft atomic.Int64 // under max_pages; -1: no limit

	hops redirectHops // redirects followed to reach a URL
}

// openBudgets derives the budgets' counts from the scheduler at open.
func (n *Node) openBudgets() error {
	b := &n.budget
	perHost := int64(max(n.cfg.Scope.MaxPagesPerHost, 0))
	if c := n.cfg.Cluster; c != nil && c.Config.Partition == cluster.ByURL {
		perHost = NodeShare(perHost, c.Config.N())
	}
	b.perHost = uint32(min(perHost, 1<<32-1))
	b.perDomain = max(n.cfg.Scope.MaxSubdomains, 0)
	b.pagesLeft.Store(-1)
	if b.perDomain > 0 {
		b.domains = map[string]int{}
		for h := range n.sched.Hosts() {
			info, err := n.sched.HostInfo(uint32(h))
			if err != nil {
				return fmt.Errorf("spider: host %d of the scheduler: %w", h, err)
			}
			if info.Pages > 0 {
				b.domains[scope.Registrable(hostName(info.Name))]++
			}
		}
	}
	if n.cfg.MaxPages > 0 {
		// A page a crash left stored but unreported (recover's n.stored)
		// was fetched against the limit and is reported without a fetch:
		// not counted, the run fetched as many pages past max_pages.
		pages := int64(len(n.stored))
		for id := uint32(0); uint64(id) < n.sched.Len(); id++ {
			if st := n.sched.URL(id).State; st == scheduler.Completed || st == scheduler.Redirected {
				pages++
			}
		}
		limit := n.cfg.MaxPages
		if c := n.cfg.Cluster; c != nil {
			limit = NodeShare(limit, c.Config.N())
		}
		b.pagesLeft.Store(max(limit-pages, 0))
	}
	return nil
}

// NodeShare is one node's share of a cluster-wide limit over nodes nodes,
// rounded up (a limit of 0, none, stays 0).
func NodeShare(limit int64, nodes int) int64 {
	if nodes <= 1 || limit <= 0 {
		return limit
	}
	return limit/int64(nodes) + min(limit%int64(nodes), 1)
}

// spend charges a new URL to its host's and its domain's budgets (scope's
// HostBudget, TooManySubdomains when over). The writer calls it.
func (n *Node) spend(u string) scope.Reason {
	b := &n.budget
	if b.perHost == 0 && b.perDomain == 0 {
		return scope.OK
	}
	key := hostKey(u)
	h, known := n.sched.FindHost(key)
	var reg string
	if !known && b.perDomain > 0 {
		// A new origin costs one of its domain's; the host table does
		// not get it unless it is admitted.
		reg = scope.Registrable(hostName(key))
		if b.domains[reg] >= b.perDomain {
			return scope.TooManySubdomains
		}
	}
	if !known {
		var err error
		if h, err = n.sched.Host(key); errors.Is(err, scheduler.ErrBadHost) {
			n.cfg.URLLogf("url %q: %v", u, err)
			return scope.BadURL
		} else if err != nil { // the scheduler's disk is full, or worse
			n.writeFailed(fmt.Errorf("spider: scheduler host %s: %w", key, err))
			return scope.BadURL
		}
	}
	ok, err := n.sched.AdmitPage(h, b.perHost)
	if err != nil {
		n.writeFailed(fmt.Errorf("spider: scheduler host budget of %s: %w", key, err))
		return scope.HostBudget
	}
	if !ok {
		return scope.HostBudget
	}
	if !known && b.perDomain > 0 {
		b.domains[reg]++
	}
	return scope.OK
}

// reserve takes up to want fetches from max_pages for a list.
func (n *Node) reserve(want int) int {
	left := &n.budget.pagesLeft
	for {
		l := left.Load()
		if l < 0 {
			return want
		}
		k := min(int64(want), l)
		if left.CompareAndSwap(l, l-k) {
			return int(k)
		}
	}
}

// unreserve gives back reserved fetches that stored no page.
func (n *Node) unreserve(k int) {
	if k > 0 && n.budget.pagesLeft.Load() >= 0 {
		n.budget.pagesLeft.Add(int64(k))
	}
}

// pagesExhausted reports whether max_pages is reached.
func (n *Node) pagesExhausted() bool { return n.budget.pagesLeft.Load() == 0 }

// hostName is the host name of a scheduler host key (see hostKey): without
// the "https:" mark and the port.
func hostName(key string) string {
	key = strings.TrimPrefix(key, "https:")
	if strings.HasPrefix(key, "[") {
		if i := strings.IndexByte(key, ']'); i >= 0 {
			return key[:i+1]
		}
		return key
	}
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		return key[:i]
	}
	return key
}

// maxRedirectHops is how many redirects in a row are followed (Go's
// http.Client stops at 10 too). A redirect's target keeps the redirecting
// page's depth, so without it a host answering /r/N with a redirect to
// /r/N+1 was crawled without end at any max_depth.
const maxRedirectHops = 10

// redirectHops carries the count of redirects in a row that led to a
// redirect's targets from followRedirect (or a peer's item) to the writer,
// which stores it with each new target's scheduler record
// (Scheduler.AddRedirect), or to route, which sends it with a target
// another node owns. The count is read back from the scheduler when the
// target is fetched: kept here until then, it was lost with a restart, and
// a chain being followed went 10 hops further per run (a node killed in a
// loop followed a hostile chain without end). Targets the writer never
// sees (the crawl stopped first) would stay: the counts live in two
// generations of redirectGen entries each, the older dropped when the
// newer is full.
type redirectHops struct {
	mu       sync.Mutex
	cur, old map[string]uint8
}

// redirectGen is the size of one generation: the writer sees a target
// long before as many other redirects are fetched.
const redirectGen = 1 << 15

// take returns, and forgets, the redirects that led to URL u.
func (r *redirectHops) take(u string) uint8 {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.cur[u]
	if ok {
		delete(r.cur, u)
	} else if h, ok = r.old[u]; ok {
		delete(r.old, u)
	}
	return h
}

// put records that hops redirects lead to u.
func (r *redirectHops) put(u string, hops uint8) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cur) >= redirectGen || r.cur == nil {
		r.old, r.cur = r.cur, make(map[string]uint8)
	}
	if h, ok := r.cur[u]; ok {
		hops = min(h, hops) // the shortest chain counts, as the shortest path does for depth
	}
	r.cur[u] = hops
}

// followRedirect applies maxRedirectHops to page id (URL u) just fetched,
// or read back from the store, with its links p: the targets of a redirect
// are counted one hop further than the page (its scheduler record's
// count), or dropped (counted rejected) when that is past the limit.
func (n *Node) followRedirect(id uint32, u string, redirect bool, p *pageLinks) {
	if !redirect || p == nil || len(p.same) == 0 {
		return
	}
	hops := n.sched.Hops(id)
	if hops >= maxRedirectHops {
		n.cfg.URLLogf("%s: redirect not followed: %d redirects in a row", u, hops+1)
		n.st.rejected.Add(uint64(len(p.same)))
		p.same = nil
		return
	}
	for _, t := range p.same {
		n.budget.hops.put(t, hops+1)
	}
}
