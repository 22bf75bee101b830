// Package stats computes the statistics of a store of crawled pages offline:
// the result tables of the thesis (summary; HTTP status; Server software;
// servers, machines and documents by domain suffix; top domains; outgoing
// links per page; file extensions; the link connectivity matrix between
// domain suffixes) and what an operator wants next (content types, charsets,
// page sizes, fetch times, compression ratio). It renders them as aligned
// text tables, JSON, or one self-contained HTML report with inline SVG
// charts.
//
// Domain suffixes are public suffixes under the ICANN section of the Public
// Suffix List (golang.org/x/net/publicsuffix): "ac.th", "co.th", "com",
// "org". That is what the thesis calls the second-level domain of the Thai
// web (ac.th, co.th, or.th, go.th), and it extends to every country without a
// hand-kept list. Private suffixes (github.io) are folded into their ICANN
// suffix (io).
//
// A Collector takes pages from any number of goroutines (storage's scan
// calls back from one goroutine per data directory): each goroutine works on
// a partial aggregate of its own, and Report merges them at the end, so the
// scan never waits on a lock and the result does not depend on the order the
// pages came in.
package stats

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/kspider/kspider/storage"
)

// Options configures a Collector.
type Options struct {
	// Limit is the number of rows a table keeps before "(other)"; 0 means 20
	// (the thesis's top 20), a negative value means no limit.
	Limit int
	// MatrixSize is the number of suffixes the link matrix shows before
	// "(other)"; 0 means 10.
	MatrixSize int
	// NewLinkFunc returns the link extractor one goroutine uses (extractors
	// keep buffers, so each goroutine gets its own). nil: links are not
	// counted, and the link tables stay empty.
	NewLinkFunc func() LinkFunc
	// StoredBytes is the size of the store on disk, for the compression
	// ratio; 0 means unknown (no ratio is reported).
	StoredBytes int64
}

// LinkFunc returns the outgoing links of the HTML page body fetched from
// pageURL with header: absolute URLs of the documents it links to (a
// crawler's hyperlinks, frames, redirects; not images or scripts). The error
// is for a page whose links cannot be extracted at all.
type LinkFunc func(body []byte, pageURL string, header http.Header) ([]string, error)

// Collector accumulates pages. Add is safe for concurrent use.
type Collector struct {
	opts  Options
	free  chan *partial // partials not in use by an Add
	mu    sync.Mutex
	all   []*partial
	count PageCount
	bad   atomic.Int64 // damaged regions the store skipped
	lost  atomic.Int64 // pages known lost in them
}

// New returns an empty Collector.
func New(opts Options) *Collector {
	if opts.Limit == 0 {
		opts.Limit = 20
	}
	if opts.MatrixSize <= 0 {
		opts.MatrixSize = 10
	}
	return &Collector{opts: opts, free: make(chan *partial, 64)}
}

// Add counts page p. It does not keep p or its buffers.
func (c *Collector) Add(p *storage.Page) {
	var part *partial
	select {
	case part = <-c.free:
	default:
		part = newPartial()
		if c.opts.NewLinkFunc != nil {
			part.linkFunc = c.opts.NewLinkFunc()
		}
		c.mu.Lock()
		c.all = append(c.all, part)
		c.mu.Unlock()
	}
	part.add(p)
	c.count.Add(p)
	select {
	case c.free <- part:
	default: // more goroutines than slots: the partial is still in c.all
	}
}

// AddDamage counts the damage the store met: regions it skipped and the
// pages known lost (storage.ScanStats.Skipped and Lost).
func (c *Collector) AddDamage(regions, lostPages int64) {
	c.bad.Add(regions)
	c.lost.Add(lostPages)
}

// Progress returns the pages and bytes added so far, for a progress display.
func (c *Collector) Progress() (pages, bytes int64) { return c.count.Progress() }

// partial is one goroutine's aggregate.
type partial struct {
	linkFunc LinkFunc
	classes  map[string]hostClass // cache: publicsuffix lookups cost
	hosts    map[string]*hostAgg

	status       map[int]int64
	serverPages  map[string]int64
	contentTypes map[string]int64
	charsets     map[string]int64
	extensions   map[string]int64
	matrix       map[[2]string]int64
	linkHist     []int64
	sizeHist     []int64
	timeHist     []int64

	pages, bytes, htmlDocs, htmlBytes, links int64
	problems                                 Problems

	targets []string // scratch: one page's link targets
}

// hostAgg is what is known of one host name.
type hostAgg struct {
	pages, docs int64
	ips         []netip.Addr    // distinct; hosts have few
	software    []softwareCount // Server products seen, with page counts
}

type softwareCount struct {
	name  string
	pages int64
}

func newPartial() *partial {
	return &partial{
		classes:      map[string]hostClass{},
		hosts:        map[string]*hostAgg{},
		status:       map[int]int64{},
		serverPages:  map[string]int64{},
		contentTypes: map[string]int64{},
		charsets:     map[string]int64{},
		extensions:   map[string]int64{},
		matrix:       map[[2]string]int64{},
		linkHist:     make([]int64, len(linkBuckets.labels)),
		sizeHist:     make([]int64, len(sizeBuckets.labels)),
		timeHist:     make([]int64, len(timeBuckets.labels)),
	}
}

func (a *partial) class(host string) hostClass {
	c, ok := a.classes[host]
	if !ok {
		c = classifyHost(host)
		a.classes[host] = c
	}
	return c
}

func (a *partial) add(p *storage.Page) {
	a.pages++
	a.bytes += int64(len(p.Header) + len(p.Body))
	a.status[p.Status]++
	a.sizeHist[sizeBuckets.index(int64(len(p.Body)))]++
	a.timeHist[timeBuckets.index(int64(p.Duration))]++
	a.extensions[extensionOf(p.URL)]++

	host := ""
	if u, err := url.Parse(p.URL); err == nil {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	if host == "" {
		a.problems.BadURLs++
	}
	h := a.hosts[host]
	if h == nil {
		h = &hostAgg{}
		a.hosts[host] = h
	}
	h.pages++
	if ip := p.ServerIP.Unmap().WithZone(""); ip.IsValid() && !slices.Contains(h.ips, ip) {
		h.ips = append(h.ips, ip)
	}

	header, err := p.ParseHeader()
	if err != nil {
		a.problems.BadHeaders++
		header = http.Header{}
	}
	software := serverProduct(header.Get("Server"))
	a.serverPages[software]++
	h.addSoftware(software, 1)
	typ, charset := mediaType(header.Get("Content-Type"))
	if typ == keyNone && len(p.Body) > 0 {
		// Sniff as a browser would; a sniffed charset was not declared.
		typ, _ = mediaType(http.DetectContentType(p.Body))
	}
	a.contentTypes[typ]++

	if p.Status < 200 || p.Status > 299 || !isHTML(typ) {
		return
	}
	a.htmlDocs++
	a.htmlBytes += int64(len(p.Body))
	h.docs++
	if charset == "" {
		charset = keyNone
	}
	a.charsets[charset]++
	if !utf8.Valid(p.Body) {
		a.problems.HTMLNotUTF8++
	}
	if a.linkFunc == nil {
		return
	}
	found, err := a.linkFunc(p.Body, p.URL, header)
	if err != nil {
		a.problems.LinkErrors++
		return
	}
	targets := append(a.targets[:0], found...)
	slices.Sort(targets)
	targets = slices.Compact(targets)
	a.targets = targets
	a.links += int64(len(targets))
	a.linkHist[linkBuckets.index(int64(len(targets)))]++
	from := a.class(host).suffix
	for _, t := range targets {
		a.matrix[[2]string{from, a.class(hostOf(t)).suffix}]++
	}
}

func (h *hostAgg) addSoftware(name string, pages int64) {
	for i := range h.software {
		if h.software[i].name == name {
			h.software[i].pages += pages
			return
		}
	}
	h.software = append(h.software, softwareCount{name, pages})
}

// mainSoftware is the product most of the host's pages named (ties: the
// first in byte order, so the result is independent of scan order).
func (h *hostAgg) mainSoftware() string {
	best := softwareCount{name: keyNone}
	for _, s := range h.software {
		if s.pages > best.pages || s.pages == best.pages && s.name < best.name {
			best = s
		}
	}
	return best.name
}

// merge adds b into a, leaving b as it was.
func (a *partial) merge(b *partial) {
	for host, hb := range b.hosts {
		ha := a.hosts[host]
		if ha == nil {
			// A copy: b stays as it was, so Report can run again.
			ha = &hostAgg{}
			a.hosts[host] = ha
		}
		ha.pages += hb.pages
		ha.docs += hb.docs
		for _, ip := range hb.ips {
			if !slices.Contains(ha.ips, ip) {
				ha.ips = append(ha.ips, ip)
			}
		}
		for _, s := range hb.software {
			ha.addSoftware(s.name, s.pages)
		}
	}
	for host, c := range b.classes {
		a.classes[host] = c
	}
	mergeMap(a.status, b.status)
	mergeMap(a.serverPages, b.serverPages)
	mergeMap(a.contentTypes, b.contentTypes)
	mergeMap(a.charsets, b.charsets)
	mergeMap(a.extensions, b.extensions)
	mergeMap(a.matrix, b.matrix)
	for i := range a.linkHist {
		a.linkHist[i] += b.linkHist[i]
	}
	for i := range a.sizeHist {
		a.sizeHist[i] += b.sizeHist[i]
	}
	for i := range a.timeHist {
		a.timeHist[i] += b.timeHist[i]
	}
	a.pages += b.pages
	a.bytes += b.bytes
	a.htmlDocs += b.htmlDocs
	a.htmlBytes += b.htmlBytes
	a.links += b.links
	a.problems.BadHeaders += b.problems.BadHeaders
	a.problems.BadURLs += b.problems.BadURLs
	a.problems.HTMLNotUTF8 += b.problems.HTMLNotUTF8
	a.problems.LinkErrors += b.problems.LinkErrors
}

func mergeMap[K comparable](a, b map[K]int64) {
	for k, v := range b {
		a[k] += v
	}
}
