package testweb

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Truth answers what the web is, for one pair of ports: what each URL
// returns, which URLs are reachable from the seeds within a depth, and which
// ones robots.txt allows. It computes from the generator, never from a
// running server, so tests can compare a crawl against it.
type Truth struct {
	web   *Web
	ports Ports
}

// Truth returns the ground truth for a web served at the given ports.
func (w *Web) Truth(pt Ports) *Truth { return &Truth{web: w, ports: pt} }

// Doc is what the web answers for one URL.
type Doc struct {
	URL      string   `json:"url"`
	Depth    int      `json:"depth"`              // link distance from the nearest seed (redirects add none)
	Kind     string   `json:"kind"`               // page, resource, robots, redirect, error, trap, dns-failure
	Status   int      `json:"status"`             // HTTP status; 0 when the name does not resolve
	Location string   `json:"location,omitempty"` // redirect target
	Links    []string `json:"links,omitempty"`    // absolute, without fragments, in document order, HTML pages only
	Bytes    int64    `json:"bytes"`              // body size; 0 for traps whose body never completes
}

// Seeds are the seed URLs.
func (t *Truth) Seeds() []string { return t.web.SeedURLs(t.ports) }

// PageCount is the number of regular HTML pages in the web.
func (t *Truth) PageCount() int { return t.web.PageCount() }

// split parses an absolute URL of the web into host and request target.
func (t *Truth) split(raw string) (*Host, string, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", "", fmt.Errorf("testweb: %q: not http(s)", raw)
	}
	name := strings.ToLower(u.Hostname())
	h, ok := t.web.Host(name)
	if !ok {
		return nil, name, "", fmt.Errorf("testweb: %q: no such host in the web", raw)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p != t.ports.of(u.Scheme) {
		return nil, name, "", fmt.Errorf("testweb: %q: the web serves %s on port %d", raw, u.Scheme, t.ports.of(u.Scheme))
	}
	target := u.EscapedPath()
	if target == "" {
		target = "/"
	}
	if u.RawQuery != "" || u.ForceQuery {
		target += "?" + u.RawQuery
	}
	return h, name, target, nil
}

// Lookup says what the server answers for an absolute URL.
func (t *Truth) Lookup(raw string) (Doc, error) {
	h, name, target, err := t.split(raw)
	if err != nil {
		return Doc{}, err
	}
	d := Doc{URL: raw}
	if !h.DNS.resolves() {
		d.Kind = "dns-failure"
		return d, nil
	}
	rt := routeOf(h, target)
	switch rt.kind {
	case routeRobots:
		d.Kind = "robots"
		switch h.Robots {
		case RobotsNone:
			d.Status = 404
		case RobotsServerErr:
			d.Status = 503
		case RobotsForbidden:
			d.Status = 403
			if h.Index%2 == 1 {
				d.Status = 401
			}
		case RobotsRedirect:
			d.Status, d.Location = 301, origin(h, h.Name, t.ports)+"/robots-moved.txt"
		case RobotsHTML:
			d.Status, d.Bytes = 200, int64(len(robotsHTML))
		default:
			d.Status, d.Bytes = 200, int64(len(robotsBody(h)))
		}
	case routeRobotsMoved:
		d.Kind, d.Status, d.Bytes = "robots", 200, int64(len(robotsRules(h)))
	case routePage, routeCalendar, routeSymlink, routeSpam:
		p := t.web.pageOf(h, name, rt)
		d.Kind, d.Status, d.Bytes = "page", 200, int64(p.size)
		if rt.kind != routePage {
			d.Kind = "trap"
		}
		seen := map[string]bool{}
		for _, l := range p.links {
			u := linkURL(l, t.ports)
			if !seen[u] {
				seen[u] = true
				d.Links = append(d.Links, u)
			}
		}
	case routeResource:
		d.Kind, d.Status, d.Bytes = "resource", 200, int64(resourceSize(h, rt.n))
	case routeRedirect:
		d.Kind, d.Status, d.Location = "redirect", rt.status, origin(h, name, t.ports)+escapeTarget(rt.location)
	case routeStatus:
		d.Kind, d.Status = "error", rt.status
	case routeStall, routeEndless, routeBomb:
		d.Kind, d.Status = "trap", 200
	default:
		d.Kind, d.Status = "error", 404
	}
	return d, nil
}

// Allowed reports whether the host's robots.txt allows agent (a product
// token such as "kspider", any case) to fetch the URL.
func (t *Truth) Allowed(agent, raw string) bool {
	h, _, target, err := t.split(raw)
	if err != nil {
		return true
	}
	return h.robotsAllowed(strings.ToLower(agent), target)
}

// Reachable is every URL reachable from the seeds by following links
// (anchors, images, scripts, stylesheets) and redirects, at most depth links
// away, in breadth-first order, at most limit URLs (limit <= 0: no limit;
// traps make the web infinite, so depth must bound it). Robots.txt is not
// consulted; see Crawlable.
func (t *Truth) Reachable(depth, limit int) []Doc { return t.bfs("", depth, limit) }

// Crawlable is Reachable for a polite crawler with product token agent: it
// never fetches what robots.txt forbids, so it neither lists those URLs nor
// follows their links.
func (t *Truth) Crawlable(agent string, depth, limit int) []Doc {
	return t.bfs(strings.ToLower(agent), depth, limit)
}

func (t *Truth) bfs(agent string, depth, limit int) []Doc {
	type item struct {
		url   string
		depth int
	}
	var out []Doc
	seen := map[string]bool{}
	var queue []item
	push := func(u string, d int) {
		if seen[u] || d > depth || limit > 0 && len(seen) >= limit {
			return
		}
		seen[u] = true
		queue = append(queue, item{u, d})
	}
	for _, s := range t.Seeds() {
		push(s, 0)
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if agent != "" && !t.Allowed(agent, it.url) {
			continue
		}
		d, err := t.Lookup(it.url)
		if err != nil {
			continue
		}
		d.Depth = it.depth
		out = append(out, d)
		if d.Location != "" {
			push(d.Location, it.depth)
		}
		for _, l := range d.Links {
			push(l, it.depth+1)
		}
	}
	return out
}

// Body returns the exact body the server sends for a URL answering 200 with
// a complete page, resource or robots.txt (traps and errors have none), so a
// test can compare what a crawler stored byte for byte.
func (t *Truth) Body(raw string) ([]byte, error) {
	h, name, target, err := t.split(raw)
	if err != nil {
		return nil, err
	}
	rt := routeOf(h, target)
	switch rt.kind {
	case routePage, routeCalendar, routeSymlink, routeSpam:
		var scratch []byte
		return t.web.render(nil, t.web.pageOf(h, name, rt), t.ports, &scratch), nil
	case routeResource:
		return t.web.appendResource(nil, h, rt.n), nil
	case routeRobots:
		switch h.Robots {
		case RobotsHTML:
			return []byte(robotsHTML), nil
		case RobotsNone, RobotsServerErr, RobotsForbidden, RobotsRedirect:
		default:
			return robotsBody(h), nil
		}
	case routeRobotsMoved:
		return []byte(robotsRules(h)), nil
	}
	return nil, fmt.Errorf("testweb: %s has no complete 200 body", raw)
}

// Bytes sums the sizes of docs.
func Bytes(docs []Doc) int64 {
	var n int64
	for _, d := range docs {
		n += d.Bytes
	}
	return n
}
