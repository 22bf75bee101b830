package scope

import "strings"

// urlParts are the pieces of a canonical URL the filters look at, as
// substrings of it (no allocation).
type urlParts struct {
	host  string // without port, brackets kept for IPv6
	path  string // from the first '/', without query
	query string // after '?', without it; hasQuery tells "?" from none
	hasQ  bool
}

// splitURL splits an absolute http(s) URL. It accepts the canonical form and
// rejects what is plainly not a URL of that form.
func splitURL(u string) (urlParts, bool) {
	var p urlParts
	var rest string
	switch {
	case strings.HasPrefix(u, "http://"):
		rest = u[len("http://"):]
	case strings.HasPrefix(u, "https://"):
		rest = u[len("https://"):]
	default:
		return p, false
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	rest = rest[end:]
	if strings.IndexByte(authority, '@') >= 0 {
		return p, false // canonical URLs carry no credentials
	}
	host := authority
	if strings.HasPrefix(host, "[") {
		i := strings.IndexByte(host, ']')
		if i < 0 {
			return p, false
		}
		host = host[:i+1]
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	if host == "" || host == "[]" {
		return p, false
	}
	p.host = host
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		p.path, p.query, p.hasQ = rest[:i], rest[i+1:], true
	} else {
		p.path = rest
	}
	if p.path == "" {
		p.path = "/"
	}
	return p, true
}
