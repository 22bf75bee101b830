package testweb

import (
	"net/url"
	"strconv"
	"strings"
)

// A URL of the web is (host, unescaped path with query). Paths are built by
// the functions here and parsed back by route, so the two must agree; the
// tests check that every generated link routes to what generated it.

// pagePath is the unescaped path (and query) of page i of h.
func pagePath(h *Host, i int) string {
	if i == 0 {
		return "/"
	}
	sec := h.sections[key(h.key, 10, uint64(i))%uint64(len(h.sections))]
	n := strconv.Itoa(i)
	switch h.style {
	case styleDir:
		return "/" + sec + "/" + n + "/"
	case styleQuery:
		return "/" + sec + "/view.php?id=" + n + "&lang=th"
	}
	slug := slugWords[key(h.key, 11, uint64(i))%uint64(len(slugWords))]
	return "/" + sec + "/" + slug + "-" + n + ".html"
}

// resourceKinds name the non-HTML resources, by index modulo 5.
var resourceKinds = []struct {
	dir, prefix, ext, mime string
}{
	{"/images/", "img-", ".jpg", "image/jpeg"},
	{"/files/", "report-", ".pdf", "application/pdf"},
	{"/images/", "icon-", ".png", "image/png"},
	{"/static/", "style-", ".css", "text/css"},
	{"/static/", "app-", ".js", "application/javascript"},
}

func resourcePath(j int) string {
	k := resourceKinds[j%len(resourceKinds)]
	return k.dir + k.prefix + strconv.Itoa(j) + k.ext
}

// routeKind is what a URL of a host is.
type routeKind uint8

const (
	routeNotFound routeKind = iota
	routePage
	routeResource
	routeRobots
	routeRobotsMoved
	routeRedirect // status and location set
	routeStatus   // an error status, maybe with Retry-After
	routeStall
	routeEndless
	routeBomb
	routeCalendar
	routeSymlink
	routeSpam
)

// route is the parsed meaning of a request for one host.
type route struct {
	kind       routeKind
	n          int    // page, resource or trap index
	status     int    // for redirects and errors
	location   string // unescaped path for same-host redirects
	retryAfter string
	sid        string // session id carried in the URL
	year       int    // calendar
	month      int
	depth      int // symlink
}

// maxTrapDepth bounds how deep symlink URLs go before they answer 414 (an
// extra bound on top of a crawler's own; the URL grows with each level).
const maxTrapDepth = 500

// routeOf parses the raw request target (path and query, escaped as sent)
// for host h.
func routeOf(h *Host, target string) route {
	rawPath, query, _ := strings.Cut(target, "?")
	p, err := url.PathUnescape(rawPath)
	if err != nil || !strings.HasPrefix(p, "/") {
		return route{kind: routeNotFound}
	}
	var sid string
	if h.Behaviour == BehaviourSession {
		query, sid = cutParam(query, "sid")
	}
	if p == "/robots.txt" && query == "" {
		return route{kind: routeRobots}
	}
	if h.Wildcard {
		if (p == "/" || strings.HasPrefix(p, "/p/")) && query == "" {
			return route{kind: routeSpam}
		}
		return route{kind: routeNotFound}
	}
	if p == "/robots-moved.txt" && query == "" && h.Robots == RobotsRedirect {
		return route{kind: routeRobotsMoved}
	}
	if query == "" {
		if r, ok := trapRoute(h, p); ok {
			return r
		}
		if r, ok := resourceRoute(h, p); ok {
			return r
		}
	}
	r := route{kind: routeNotFound, sid: sid}
	full := p
	if query != "" {
		full += "?" + query
	}
	if p == "/" && query == "" {
		r.kind, r.n = routePage, 0
		return r
	}
	n := pageNumber(h, p, query)
	if n > 0 && n < h.Pages && pagePath(h, n) == full {
		r.kind, r.n = routePage, n
	}
	return r
}

// pageNumber extracts the page index a path claims to be (-1 if none).
func pageNumber(h *Host, p, query string) int {
	var digits string
	switch h.style {
	case styleQuery:
		v, err := url.ParseQuery(query)
		if err != nil {
			return -1
		}
		digits = v.Get("id")
	case styleDir:
		s := strings.TrimSuffix(p, "/")
		digits = s[strings.LastIndexByte(s, '/')+1:]
	default:
		s := strings.TrimSuffix(p, ".html")
		digits = s[strings.LastIndexByte(s, '-')+1:]
	}
	n, err := strconv.Atoi(digits)
	if err != nil || len(digits) > 9 {
		return -1
	}
	return n
}

func resourceRoute(h *Host, p string) (route, bool) {
	for k, rk := range resourceKinds {
		rest, ok := strings.CutPrefix(p, rk.dir+rk.prefix)
		if !ok {
			continue
		}
		digits, ok := strings.CutSuffix(rest, rk.ext)
		if !ok {
			continue
		}
		j, err := strconv.Atoi(digits)
		if err != nil || j < 0 || j >= h.Resources || j%len(resourceKinds) != k || strconv.Itoa(j) != digits {
			continue
		}
		return route{kind: routeResource, n: j}, true
	}
	return route{}, false
}

// cutParam removes name=value from a query, returning the rest and value.
func cutParam(query, name string) (rest, value string) {
	if query == "" {
		return "", ""
	}
	parts := strings.Split(query, "&")
	out := parts[:0]
	for _, part := range parts {
		if v, ok := strings.CutPrefix(part, name+"="); ok {
			value = v
			continue
		}
		out = append(out, part)
	}
	return strings.Join(out, "&"), value
}

// withSid adds a session id to an unescaped path-with-query.
func withSid(p, sid string) string {
	if strings.Contains(p, "?") {
		return p + "&sid=" + sid
	}
	return p + "?sid=" + sid
}

// atoiPart parses a decimal path segment, rejecting anything odd.
func atoiPart(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}
