package testweb

import (
	"bytes"
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

// appendRelative appends target (a path without query) relative to
// directory base, both unescaped and starting with "/".
func appendRelative(dst []byte, base, target string) []byte {
	// Common leading directories: whole segments of base that target shares.
	common := 0 // bytes of base (after the leading "/") shared by whole segments
	for i := 1; i < len(base); i++ {
		if i >= len(target) || base[i] != target[i] {
			break
		}
		if base[i] == '/' {
			common = i
		}
	}
	ups := 0
	for i := common + 1; i < len(base); i++ {
		if base[i] == '/' {
			ups++
		}
	}
	for k := 0; k < ups; k++ {
		dst = append(dst, "../"...)
	}
	rest := target[common+1:]
	if ups == 0 {
		// "./" when empty or when the first segment could read as a scheme.
		first := rest
		if i := strings.IndexByte(first, '/'); i >= 0 {
			first = first[:i]
		}
		if rest == "" || strings.IndexByte(first, ':') >= 0 {
			dst = append(dst, "./"...)
		}
	}
	dst = appendEscapedPath(dst, rest)
	return dst
}

// appendEscapedPath percent-encodes what a path must not carry raw.
func appendEscapedPath(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && c != '%' && c != '?' && c != '#' && c > ' ' {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
	}
	return dst
}

// appendTarget appends an unescaped path-with-query, the path escaped.
func appendTarget(dst []byte, p string) []byte {
	path, query, hasQuery := strings.Cut(p, "?")
	dst = appendEscapedPath(dst, path)
	if hasQuery {
		dst = append(dst, '?')
		dst = append(dst, query...)
	}
	return dst
}

func appendOrigin(dst []byte, h *Host, name string, pt Ports) []byte {
	dst = append(dst, h.Scheme...)
	dst = append(dst, "://"...)
	dst = append(dst, name...)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, int64(pt.of(h.Scheme)), 10)
}

// appendHref appends how page p writes link l: absolute, protocol-relative,
// root-relative, relative to the page's directory (or to its <base>), or as
// a bare query; sometimes with a fragment.
func appendHref(dst []byte, p *page, base string, l link, pt Ports, r *rng) []byte {
	x := r.intn(100)
	switch {
	case l.name != p.name:
		if x < 15 && l.host.Scheme == p.host.Scheme {
			dst = append(dst, "//"...)
			dst = append(dst, l.name...)
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, int64(pt.of(l.host.Scheme)), 10)
		} else {
			dst = appendOrigin(dst, l.host, l.name, pt)
		}
		dst = appendTarget(dst, l.path)
	case x < 20:
		dst = appendOrigin(dst, l.host, l.name, pt)
		dst = appendTarget(dst, l.path)
	case x < 55:
		dst = appendTarget(dst, l.path)
	default:
		tpath, tquery, hasQuery := strings.Cut(l.path, "?")
		cur, _, _ := strings.Cut(p.path, "?")
		if hasQuery && tpath == cur && base == dir(p.path) && x < 70 {
			dst = append(dst, '?')
			dst = append(dst, tquery...)
			break
		}
		mark := len(dst)
		if x%2 == 0 {
			dst = append(dst, "./"...)
		}
		dst = appendRelative(dst, base, tpath)
		// Never "./../x" or "././x": drop the optional "./" again.
		if x%2 == 0 && len(dst) >= mark+4 && (string(dst[mark+2:mark+4]) == "./" || string(dst[mark+2:mark+4]) == "..") {
			dst = append(dst[:mark], dst[mark+2:]...)
		}
		if hasQuery {
			dst = append(dst, '?')
			dst = append(dst, tquery...)
		}
	}
	if r.chance(0.1) {
		dst = append(dst, '#')
		dst = append(dst, pick(r, []string{"top", "content", "section-2", "main", ""})...)
	}
	return dst
}

// appendAttr appends name=value with varying quoting; & is written as &amp;.
func appendAttr(dst []byte, name string, value []byte, r *rng) []byte {
	dst = append(dst, ' ')
	dst = append(dst, name...)
	dst = append(dst, '=')
	q := byte('"')
	switch x := r.intn(20); {
	case x < 3 && len(value) > 0 && bytes.IndexAny(value, " \"'<>=`") < 0:
		q = 0
	case x < 6:
		q = '\''
	}
	if q != 0 {
		dst = append(dst, q)
	}
	for _, c := range value {
		if c == '&' {
			dst = append(dst, "&amp;"...)
		} else {
			dst = append(dst, c)
		}
	}
	if q != 0 {
		dst = append(dst, q)
	}
	return dst
}

// attr is appendAttr for a string value.
func attr(dst []byte, name, value string, r *rng) []byte {
	return appendAttr(dst, name, []byte(value), r)
}
