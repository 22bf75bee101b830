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
	fixed, changed := EscapeStrayPercent(raw)
	if !changed || !strings.Contains(raw, "://") { // a list's URLs are absolute
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

// EscapeStrayPercent writes each '%' of reference loc's path and fragment
// that starts no escape ("/home%", "/50%-off") as "%25", for url.Parse,
// which refuses them; the authority is left alone (a '%' there is an
// error either way) and so is the query, which url.Parse takes as written.
// ParseURL applies it to a list's URLs; robots.txt redirects apply it
// to their Location, which may be relative.
func EscapeStrayPercent(loc string) (string, bool) {
	start := 0
	if i := strings.Index(loc, "//"); i == 0 || i > 0 && loc[i-1] == ':' && !strings.ContainsAny(loc[:i-1], "/?#:") {
		// "scheme://authority..." or "//authority...": the path starts
		// after the authority.
		j := strings.IndexAny(loc[i+2:], "/?#")
		if j < 0 {
			return loc, false
		}
		start = i + 2 + j
	}
	var b strings.Builder
	changed, inQuery, inFragment := false, false, false
	for k := 0; k < len(loc); k++ {
		c := loc[k]
		if k >= start {
			switch {
			case c == '?' && !inQuery && !inFragment:
				inQuery = true
			case c == '#' && !inFragment:
				inQuery, inFragment = false, true
			case c == '%' && !inQuery && !(k+2 < len(loc) && ishex(loc[k+1]) && ishex(loc[k+2])):
				if !changed {
					b.Grow(len(loc) + 8)
					b.WriteString(loc[:k])
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
		return loc, false
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
