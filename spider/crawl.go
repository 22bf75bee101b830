// Package spider wires one kspider node together and holds its page
// processing: link extraction (spider/links), URL normalisation
// (spider/urlnorm), scope and trap filters (spider/scope) and robots.txt
// (spider/robots).
//
// Crawl is the node's crawl loop on one machine, without the cluster parts
// that later issues add (phase scheduler, pipelined collector, UDP
// communicator). Data flows one way: the frontier hands URL ids to host
// workers, a worker fetches its host's URLs in order over one persistent
// HTTP/1.1 connection, stores each page, extracts and filters its links, and
// adds the new ones to the URL tree, which feeds the frontier again.
//
// The frontier is level-synchronous: every URL at link depth d is fetched
// before any URL at depth d+1. A URL is therefore first seen at its shortest
// depth, so the depth limit admits exactly the URLs within it, whatever order
// the hosts answer in. Redirect targets keep the depth of the redirecting URL.
package spider

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kspider/kspider/spider/links"
	"github.com/kspider/kspider/spider/robots"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// Config configures a crawl. Dir and Seeds are required.
type Config struct {
	Dir       string   // node state: Dir/urls (URL tree), Dir/pages (page store)
	Seeds     []string // absolute http(s) URLs, depth 0
	UserAgent string   // default DefaultUserAgent

	MaxDepth     int           // link depth limit (default 3)
	MaxFetches   int           // stop after this many fetches; 0: no limit
	HostWorkers  int           // hosts fetched at once (default 64)
	FetchTimeout time.Duration // per request, body included (default 10 s)
	MaxBody      int64         // bytes of body kept per page (default 4 MiB)
	// ReconnectGap is how long a host's next connection waits after its
	// previous one closed (default 100 ms; see connGate).
	ReconnectGap time.Duration
	Scope        *scope.Config // scope and trap filters (default scope.Default())
	Codec        string        // page codec (default lzo)

	Lookup  LookupFunc           // host name resolution (default: the OS)
	RootCAs *x509.CertPool       // trusted CAs for https (default: the system's)
	Logf    func(string, ...any) // progress and skipped input; nil: silent
}

// DefaultUserAgent is what a node sends unless configured otherwise.
const DefaultUserAgent = "KSpider/0.1 (+https://github.com/kspider/kspider)"

// Summary is what a crawl did.
type Summary struct {
	Seeds        int            `json:"seeds"`
	Levels       int            `json:"levels"`        // depth levels crawled
	Fetched      int            `json:"fetched"`       // HTTP responses received
	Statuses     map[int]int    `json:"statuses"`      // by status code
	Errors       map[string]int `json:"errors"`        // failed fetches by kind
	Bytes        int64          `json:"bytes"`         // body bytes received (after the cap)
	Truncated    int            `json:"truncated"`     // bodies cut at MaxBody
	ShortBodies  int            `json:"short_bodies"`  // bodies that ended early, kept as received
	HTML         int            `json:"html"`          // HTML pages parsed for links
	Links        int            `json:"links"`         // links extracted
	NoFollow     int            `json:"nofollow"`      // pages whose links were not followed (robots meta or header)
	Admitted     int            `json:"admitted"`      // new URLs added to the URL tree (seeds included)
	TooDeep      int            `json:"too_deep"`      // link sightings beyond the depth limit
	Rejected     map[string]int `json:"rejected"`      // link sightings refused by the scope and trap filters, by reason
	RobotsDenied int            `json:"robots_denied"` // URLs robots.txt forbade
	Stored       uint64         `json:"stored"`        // pages durable in the store
	URLs         int            `json:"urls"`          // URLs in the tree at the end
	Hosts        int            `json:"hosts"`         // origins that answered at least once
	Elapsed      time.Duration  `json:"elapsed_ns"`
	Fetches      []string       `json:"-"` // every URL fetched, in no particular order
	hostSet      map[string]bool
}

// urlState is what the crawl knows of one URL id.
type urlState uint8

const (
	stateQueued urlState = iota
	stateFetched
	stateFailed
	stateDenied
)

type crawl struct {
	cfg    Config
	client *http.Client
	robots *robots.Source
	filter *scope.Filter
	depth  scope.Depth
	tree   *urltree.Tree
	store  *storage.Store

	mu      sync.Mutex          // guards everything below
	depths  []uint8             // by URL id
	states  []urlState          // by URL id
	same    map[string][]uint32 // origin -> ids at the current level (redirect targets)
	next    map[string][]uint32 // origin -> ids at the next level
	started int                 // fetches started (for MaxFetches)
	sum     Summary
}

func (cfg *Config) setDefaults() error {
	if cfg.Dir == "" {
		return errors.New("spider: Config.Dir is required")
	}
	if len(cfg.Seeds) == 0 {
		return errors.New("spider: no seed URLs")
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 3
	}
	if cfg.MaxDepth > int(scope.NoDepth)-1 {
		return fmt.Errorf("spider: MaxDepth %d is over %d", cfg.MaxDepth, scope.NoDepth-1)
	}
	if cfg.HostWorkers <= 0 {
		cfg.HostWorkers = 64
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 4 << 20
	}
	if cfg.ReconnectGap <= 0 {
		cfg.ReconnectGap = 100 * time.Millisecond
	}
	if cfg.Scope == nil {
		d := scope.Default()
		cfg.Scope = &d
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return nil
}

// Crawl crawls from cfg.Seeds until no URL within the depth limit is left
// (or MaxFetches is reached, or ctx ends), and returns what it did. The URL
// tree and the pages stay in cfg.Dir.
func Crawl(ctx context.Context, cfg Config) (*Summary, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	filter, err := scope.New(*cfg.Scope)
	if err != nil {
		return nil, err
	}
	tree, err := urltree.Open(filepath.Join(cfg.Dir, "urls"), nil)
	if err != nil {
		return nil, err
	}
	store, err := storage.Open(storage.Config{Dirs: []string{filepath.Join(cfg.Dir, "pages")}, Codec: cfg.Codec, Logf: cfg.Logf})
	if err != nil {
		tree.Close()
		return nil, err
	}
	transport := newTransport(cfg.Lookup, cfg.RootCAs, cfg.FetchTimeout, cfg.ReconnectGap)
	defer transport.CloseIdleConnections()
	c := &crawl{
		cfg:    cfg,
		client: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		robots: &robots.Source{
			Fetcher: &robots.Fetcher{Client: robots.NewClient(transport), UserAgent: cfg.UserAgent, Timeout: cfg.FetchTimeout},
			Cache:   robots.NewCache(1<<16, robots.DefaultTTL),
		},
		filter: filter,
		depth:  scope.Depth{Max: cfg.MaxDepth, Store: scope.NewMemDepth()},
		tree:   tree,
		store:  store,
		next:   map[string][]uint32{},
		sum: Summary{Seeds: len(cfg.Seeds), Statuses: map[int]int{}, Errors: map[string]int{},
			Rejected: map[string]int{}, hostSet: map[string]bool{}},
	}
	start := time.Now()
	for _, s := range cfg.Seeds {
		c.see(s, 0)
	}
	runErr := c.run(ctx)
	c.sum.Elapsed = time.Since(start)
	c.sum.URLs = tree.Len()
	c.sum.Hosts = len(c.sum.hostSet)
	err = errors.Join(runErr, store.Close(), tree.Sync(), tree.Close())
	c.sum.Stored = store.Durable()
	return &c.sum, err
}

// run crawls level by level until the frontier is empty.
func (c *crawl) run(ctx context.Context) error {
	level := 0
	for {
		c.mu.Lock()
		var cur map[string][]uint32
		switch {
		case len(c.same) > 0: // redirect targets found at this level
			cur, c.same = c.same, nil
		case len(c.next) > 0:
			if c.sum.Levels > 0 {
				level++
			}
			cur, c.next = c.next, map[string][]uint32{}
			c.sum.Levels = level + 1
		}
		c.mu.Unlock()
		if cur == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cfg.Logf("level %d: %d hosts", level, len(cur))
		c.runLevel(ctx, cur)
	}
}

// runLevel fetches every host of one level, HostWorkers hosts at a time, the
// URLs of one host in order on one connection. Big hosts go first so the
// level is not left waiting on one late giant.
func (c *crawl) runLevel(ctx context.Context, hosts map[string][]uint32) {
	origins := make([]string, 0, len(hosts))
	for o := range hosts {
		origins = append(origins, o)
	}
	sort.Slice(origins, func(i, j int) bool {
		if a, b := len(hosts[origins[i]]), len(hosts[origins[j]]); a != b {
			return a > b
		}
		return origins[i] < origins[j]
	})
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(c.cfg.HostWorkers, len(origins)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for o := range work {
				for _, id := range hosts[o] {
					buf = c.fetchOne(ctx, id, buf)
				}
			}
		}()
	}
	for _, o := range origins {
		select {
		case work <- o:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// fetchOne fetches URL id, stores the page and follows its links.
func (c *crawl) fetchOne(ctx context.Context, id uint32, buf []byte) []byte {
	if ctx.Err() != nil {
		return buf
	}
	c.mu.Lock()
	if c.states[id] != stateQueued || c.cfg.MaxFetches > 0 && c.started >= c.cfg.MaxFetches {
		c.mu.Unlock()
		return buf
	}
	c.started++
	d := int(c.depths[id])
	buf, err := c.tree.Get(id, buf[:0])
	c.mu.Unlock()
	if err != nil {
		c.cfg.Logf("url %d: %v", id, err)
		return buf
	}
	u := string(buf)
	if !c.robots.Allowed(ctx, u) {
		c.finish(id, stateDenied, func(s *Summary) { s.RobotsDenied++ })
		return buf
	}
	resp, err := fetch(ctx, c.client, c.cfg.UserAgent, u, c.cfg.MaxBody, c.cfg.FetchTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return buf
		}
		kind := errorKind(err)
		c.cfg.Logf("fetch %s: %s: %v", u, kind, err)
		c.finish(id, stateFailed, func(s *Summary) { s.Errors[kind]++ })
		return buf
	}
	if resp.short {
		c.cfg.Logf("fetch %s: body cut short after %d bytes: %v", u, len(resp.body), resp.readErr)
	}
	page := &storage.Page{URLID: uint64(id), URL: u, FetchTime: resp.start.UTC(), Duration: resp.duration,
		Status: resp.status, Header: resp.rawHeader, ServerIP: resp.serverIP, Body: resp.body}
	if err := c.store.Put(ctx, page); err != nil {
		c.cfg.Logf("store %s: %v", u, err)
	}
	html := resp.status/100 == 2 && strings.Contains(strings.ToLower(resp.header.Get("Content-Type")), "html")
	redirect := resp.status/100 == 3
	var res links.Result
	if html || redirect {
		body := resp.body
		if redirect {
			body = nil // only the Location, Link and Refresh headers count
		}
		res, err = links.Extract(body, u, resp.header, links.Options{Agent: robots.ProductToken(c.cfg.UserAgent)})
		if err != nil {
			c.cfg.Logf("links of %s: %v", u, err)
		}
	}
	c.finish(id, stateFetched, func(s *Summary) {
		s.Fetched++
		s.Statuses[resp.status]++
		s.Bytes += int64(len(resp.body))
		s.hostSet[robots.OriginOf(u)] = true
		s.Fetches = append(s.Fetches, u)
		if resp.truncated {
			s.Truncated++
		}
		if resp.short {
			s.ShortBodies++
		}
		if html {
			s.HTML++
		}
		s.Links += len(res.Links)
		if res.NoFollow {
			s.NoFollow++
		}
	})
	if res.NoFollow {
		return buf
	}
	for _, l := range res.Links {
		// <base href> says how the page's links resolve; it is not a link
		// to a resource, so the crawl does not follow it.
		if l.NoFollow || l.Element == "base" {
			continue
		}
		if redirect && l.Element == links.ElementHeader && strings.EqualFold(l.Attr, "location") {
			c.see(l.URL, d)
		} else {
			c.see(l.URL, d+1)
		}
	}
	return buf
}

// finish records the outcome of one URL.
func (c *crawl) finish(id uint32, st urlState, count func(*Summary)) {
	c.mu.Lock()
	c.states[id] = st
	count(&c.sum)
	c.mu.Unlock()
}

// see is one sighting of URL u at link depth d: it applies the depth limit
// and the scope filters, adds a new URL to the tree and queues it.
func (c *crawl) see(u string, d int) {
	dec := c.depth.Seen(u, d)
	c.mu.Lock()
	defer c.mu.Unlock()
	if dec.Reason == scope.TooDeep {
		c.sum.TooDeep++
		return
	}
	if !dec.Crawl {
		if dec.Reexpand {
			c.reexpand(u, dec.Depth)
		}
		return
	}
	if r := c.filter.Admit(u); r != scope.OK {
		c.sum.Rejected[r.String()]++
		return
	}
	id, added, err := c.tree.AddString(u)
	if err != nil {
		c.cfg.Logf("url %q: %v", u, err)
		c.sum.Rejected["urltree"]++
		return
	}
	if !added {
		c.reexpand(u, dec.Depth)
		return
	}
	c.depths = append(c.depths, dec.Depth)
	c.states = append(c.states, stateQueued)
	c.sum.Admitted++
	o := robots.OriginOf(u)
	if int(dec.Depth) == c.sum.Levels-1 && c.sum.Levels > 0 {
		if c.same == nil {
			c.same = map[string][]uint32{}
		}
		c.same[o] = append(c.same[o], id)
	} else {
		c.next[o] = append(c.next[o], id)
	}
}

// reexpand lowers the depth of a known URL still waiting in the frontier. In
// a level-synchronous crawl only a redirect can find a shorter path to a URL
// already queued, and never to one already fetched. Called with c.mu held.
func (c *crawl) reexpand(u string, d uint8) {
	id, ok := c.tree.FindString(u)
	if !ok || int(id) >= len(c.depths) || d >= c.depths[id] {
		return
	}
	if c.states[id] == stateQueued {
		c.depths[id] = d
	}
}
