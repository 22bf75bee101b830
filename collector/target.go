package collector

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// What a list's URLs become on the wire: the origin a list is fetched from,
// and each URL's request target, kept as written where net/url would
// rewrite it.

// origin is a list's scheme, host and port.
type origin struct {
	key  string // scheme://host:port, the no-pipelining list's key
	host string // without brackets
	port uint16
	tls  bool
}

func originOf(u *url.URL) (origin, error) {
	var o origin
	switch u.Scheme {
	case "http":
		o.port = 80
	case "https":
		o.port, o.tls = 443, true
	default:
		return o, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	o.host = strings.ToLower(u.Hostname())
	if o.host == "" {
		return o, errors.New("no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return o, fmt.Errorf("bad port %q", p)
		}
		o.port = uint16(n)
	}
	o.key = u.Scheme + "://" + o.host + ":" + strconv.Itoa(int(o.port))
	return o, nil
}

// ParseURL parses raw, a URL of a list, as the collector does for its
// request; tools that check a URL before they hand it over use it. A path holding
// a '%' that starts no escape ("/home%", "/50%-off") fails url.Parse, yet
// the canonical form keeps it as written, as browsers send it (WHATWG), so
// such a URL ended bad-url and was never fetched: it is parsed with those
// '%' escaped and requested as written (keepTarget). When the path cannot
// go out as written (bytes a request line may not carry), the URL stays
// refused with url.Parse's error: requesting "%25" would be another resource.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err == nil {
		keepTarget(u, raw)
		return u, nil
	}
	fixed, changed := escapeStrayPercent(raw)
	if !changed {
		return nil, err
	}
	v, err2 := url.Parse(fixed)
	if err2 != nil {
		return nil, err
	}
	keepTarget(v, raw)
	if v.Opaque == "" {
		return nil, err
	}
	return v, nil
}

// escapeStrayPercent writes each '%' of raw's path and fragment that is not
// followed by two hex digits as "%25". The authority is left alone (a '%'
// there is an error either way) and so is the query, which url.Parse takes
// as written.
func escapeStrayPercent(raw string) (string, bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw, false
	}
	start := i + 3
	if j := strings.IndexAny(raw[start:], "/?#"); j >= 0 {
		start += j
	} else {
		return raw, false
	}
	var b strings.Builder
	changed := false
	inQuery, inFragment := false, false
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if k >= start {
			switch {
			case c == '?' && !inFragment:
				inQuery = true
			case c == '#' && !inFragment:
				inQuery, inFragment = false, true
			case c == '%' && !inQuery && !(k+2 < len(raw) && ishex(raw[k+1]) && ishex(raw[k+2])):
				if !changed {
					b.Grow(len(raw) + 8)
					b.WriteString(raw[:k])
					changed = true
				}
				b.WriteString("%25")
				continue
			}
		}
		if changed {
			b.WriteByte(c)
		}
	}
	if !changed {
		return raw, false
	}
	return b.String(), true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// keepTarget makes u, parsed from raw, write raw's path as the request
// line's target, byte for byte. net/url writes a path it would escape
// differently ('|' or '^' in it) from its decoded form, so "/a%2Fb|c" went
// out as "/a/b%7Cc" and "%2B" as '+': another resource, whose page was
// kept as this URL's. A path of bytes that may not appear in a request
// line as they are (a URL given by hand) is left to net/url. A path that
// starts with "//" goes in absolute form: in origin form it would be read
// as an authority.
func keepTarget(u *url.URL, raw string) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return
	}
	rest := raw[i+3:]
	j := strings.IndexAny(rest, "/?#")
	if j < 0 || rest[j] != '/' {
		return
	}
	path := rest[j:]
	if k := strings.IndexAny(path, "?#"); k >= 0 {
		path = path[:k]
	}
	if path == u.EscapedPath() {
		return
	}
	for k := 0; k < len(path); k++ {
		if path[k] <= ' ' || path[k] >= 0x7f {
			return
		}
	}
	if strings.HasPrefix(path, "//") {
		path = "//" + u.Host + path
	}
	u.Opaque = path
}
