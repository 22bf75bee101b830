package testweb

import (
	"math"
	"strconv"
)

// linkKind is the element a link is written as.
type linkKind uint8

const (
	linkAnchor linkKind = iota
	linkImage
	linkStylesheet
	linkScript
)

// link is one outgoing reference of a page: host name and unescaped
// path-with-query.
type link struct {
	host *Host
	name string // the host name as written (a subdomain for spam domains)
	path string
	kind linkKind
}

// page is everything about an HTML page but its filler text.
type page struct {
	host  *Host
	name  string
	path  string // unescaped path-with-query of the page itself
	key   uint64
	size  int // exact body size in bytes
	links []link
}

// minPageSize bounds every page from below so the markup always fits inside
// the page's drawn size, which makes sizes known without rendering.
const minPageSize = 9000

// maxPageSize is the largest HTML page.
const maxPageSize = 1 << 20

// pageSize draws an HTML page size: a log-normal body with a Pareto tail.
func (w *Web) pageSize(k uint64) int {
	r := newRng(key(k, 30))
	mean := float64(w.cfg.MeanPageSize)
	var s float64
	if r.chance(0.005) {
		// Long tail: Pareto from 100 KB, alpha 1.2, capped at 1 MiB.
		s = 100000 / math.Pow(1-r.float(), 1/1.2)
	} else {
		// Log-normal, sigma 0.9, scaled so the overall mean is near cfg.
		extra := (mean - minPageSize) * 0.7
		if extra < 1000 {
			extra = 1000
		}
		s = minPageSize + extra*math.Exp(0.9*r.normal()-0.405)
	}
	if s > maxPageSize {
		s = maxPageSize
	}
	if s < minPageSize {
		s = minPageSize
	}
	return int(s)
}

// pageOf builds the page for a route of kind routePage, routeCalendar,
// routeSymlink or routeSpam. name is the host name requested.
func (w *Web) pageOf(h *Host, name string, rt route) *page {
	p := &page{host: h, name: name, links: make([]link, 0, 32)}
	switch rt.kind {
	case routePage:
		p.path = pagePath(h, rt.n)
		if rt.sid != "" {
			p.path = withSid(p.path, rt.sid)
		}
		p.key = key(h.key, 20, uint64(rt.n))
		w.regularLinks(p, rt.n, rt.sid)
	case routeCalendar:
		p.path = calendarPath(rt.year, rt.month)
		p.key = key(h.key, 21, uint64(rt.year*12+rt.month))
		w.add(p, h, h.Name, calendarPath(rt.year, rt.month+1), linkAnchor)
		w.add(p, h, h.Name, calendarPath(rt.year, rt.month-1), linkAnchor)
		w.add(p, h, h.Name, calendarPath(rt.year+1, rt.month), linkAnchor)
		w.add(p, h, h.Name, "/", linkAnchor)
	case routeSymlink:
		p.path = symlinkPath(rt.depth)
		p.key = key(h.key, 22, uint64(rt.depth))
		w.add(p, h, h.Name, symlinkPath(rt.depth+1), linkAnchor)
		if rt.depth > 0 {
			w.add(p, h, h.Name, symlinkPath(rt.depth-1), linkAnchor)
		}
		w.add(p, h, h.Name, "/", linkAnchor)
	case routeSpam:
		p.path = "/"
		p.key = key(h.key, 23, strKey(name))
		r := newRng(p.key)
		for i := 0; i < 15; i++ {
			sub := strconv.FormatUint(r.next()%(1<<32), 36)
			w.add(p, h, sub+"."+h.Name, "/", linkAnchor)
		}
	}
	p.size = w.pageSize(p.key)
	return p
}

func (w *Web) add(p *page, h *Host, name, path string, kind linkKind) {
	p.links = append(p.links, link{host: h, name: name, path: path, kind: kind})
}

// regularLinks fills the links of page i: a tree of children (so every page
// is reachable from "/"), Zipf-popular pages of the same host, links to other
// hosts by Zipf popularity, resources, and the host's trap entry.
func (w *Web) regularLinks(p *page, i int, sid string) {
	h := p.host
	r := newRng(key(p.key, 31))
	n := 10 + r.intn(11)
	sameHost := func(path string, kind linkKind) {
		if sid != "" {
			path = withSid(path, strconv.FormatUint(key(strKey(sid), strKey(path))%(1<<40), 16))
		} else if h.Behaviour == BehaviourSession {
			path = withSid(path, strconv.FormatUint(key(h.key, strKey(path))%(1<<40), 16))
		}
		w.add(p, h, h.Name, path, kind)
	}
	made := 0
	for c := 4*i + 1; c <= 4*i+4 && c < h.Pages && made < n; c++ {
		sameHost(pagePath(h, c), linkAnchor)
		made++
	}
	for ; made < n; made++ {
		if r.chance(0.9) || len(w.byRank) < 2 {
			var j int
			switch {
			case r.chance(0.3) && i > 0:
				j = (i - 1) / 4 // the parent
			case r.chance(0.3):
				j = i + 1
			default:
				j = r.zipfIndex(h.Pages)
			}
			if j >= h.Pages {
				j = 0
			}
			sameHost(pagePath(h, j), linkAnchor)
			continue
		}
		t := w.byRank[r.zipfIndex(len(w.byRank))]
		if t == h {
			t = w.byRank[(t.Rank+1)%len(w.byRank)]
		}
		name := t.Name
		path := "/"
		if t.Wildcard {
			name = "www." + t.Name
		} else if r.chance(0.3) {
			path = pagePath(t, r.zipfIndex(t.Pages))
		}
		w.add(p, t, name, path, linkAnchor)
	}
	// Resources: a stylesheet and script in the head, images and PDFs in the body.
	nres := 1 + r.intn(3)
	for k := 0; k < nres; k++ {
		j := r.intn(h.Resources)
		kind := linkAnchor
		switch j % len(resourceKinds) {
		case 0, 2:
			kind = linkImage
		case 3:
			kind = linkStylesheet
		case 4:
			kind = linkScript
		}
		w.add(p, h, h.Name, resourcePath(j), kind)
	}
	if e, ok := trapEntry(h, i); ok {
		w.add(p, h, h.Name, e, linkAnchor)
	}
}
