package testweb

import (
	"strconv"
	"strings"
)

// Ports are the listener ports URLs carry.
type Ports struct{ HTTP, HTTPS int }

func (pt Ports) of(scheme string) int {
	if scheme == "https" {
		return pt.HTTPS
	}
	return pt.HTTP
}

// origin is "scheme://name:port".
func origin(h *Host, name string, pt Ports) string {
	return h.Scheme + "://" + name + ":" + strconv.Itoa(pt.of(h.Scheme))
}

// escapeTarget percent-encodes the path part of an unescaped path-with-query.
func escapeTarget(p string) string {
	path, query, hasQuery := strings.Cut(p, "?")
	path = escapePathSegment(path)
	if hasQuery {
		return path + "?" + query
	}
	return path
}

// linkURL is the absolute URL of a link, as a crawler should resolve it.
func linkURL(l link, pt Ports) string {
	return origin(l.host, l.name, pt) + escapeTarget(l.path)
}

// dir returns the directory part of an unescaped path ("/a/b.html" -> "/a/").
func dir(p string) string {
	p, _, _ = strings.Cut(p, "?")
	return p[:strings.LastIndexByte(p, '/')+1]
}

// relative writes target (a path without query) relative to directory base.
func relative(base, target string) string {
	bs := strings.Split(strings.Trim(base, "/"), "/")
	if base == "/" {
		bs = nil
	}
	ts := strings.Split(strings.TrimPrefix(target, "/"), "/")
	common := 0
	for common < len(bs) && common < len(ts)-1 && bs[common] == ts[common] {
		common++
	}
	var b strings.Builder
	for k := common; k < len(bs); k++ {
		b.WriteString("../")
	}
	b.WriteString(strings.Join(ts[common:], "/"))
	s := b.String()
	if s == "" || !strings.HasPrefix(s, "../") && strings.Contains(strings.SplitN(s, "/", 2)[0], ":") {
		return "./" + s
	}
	return s
}

// href chooses how page p writes link l: absolute, protocol-relative,
// root-relative, relative to the page's directory (or to its <base>), or as
// a bare query; sometimes with a fragment.
func href(p *page, base string, l link, pt Ports, r *rng) string {
	var s string
	x := r.intn(100)
	switch {
	case l.name != p.name:
		if x < 15 && l.host.Scheme == p.host.Scheme {
			s = "//" + l.name + ":" + strconv.Itoa(pt.of(l.host.Scheme)) + escapeTarget(l.path)
		} else {
			s = linkURL(l, pt)
		}
	case x < 20:
		s = linkURL(l, pt)
	case x < 55:
		s = escapeTarget(l.path)
	default:
		tpath, tquery, hasQuery := strings.Cut(l.path, "?")
		cur, _, _ := strings.Cut(p.path, "?")
		if hasQuery && tpath == cur && base == dir(p.path) && x < 70 {
			s = "?" + tquery
			break
		}
		s = escapePathSegment(relative(base, tpath))
		if strings.HasPrefix(s, "./") && x%2 == 0 && s != "./" {
			s = s[2:]
			if strings.Contains(strings.SplitN(s, "/", 2)[0], ":") {
				s = "./" + s
			}
		}
		if hasQuery {
			s += "?" + tquery
		}
	}
	if r.chance(0.1) {
		s += "#" + pick(r, []string{"top", "content", "section-2", "main", ""})
	}
	return s
}

// attr appends name=value with varying quoting; & is always written as &amp;.
func attr(dst []byte, name, value string, r *rng) []byte {
	value = strings.ReplaceAll(value, "&", "&amp;")
	dst = append(dst, ' ')
	dst = append(dst, name...)
	dst = append(dst, '=')
	switch x := r.intn(20); {
	case x < 3 && value != "" && !strings.ContainsAny(value, " \"'<>=`"):
		return append(dst, value...)
	case x < 6:
		dst = append(dst, '\'')
		dst = append(dst, value...)
		return append(dst, '\'')
	}
	dst = append(dst, '"')
	dst = append(dst, value...)
	return append(dst, '"')
}
