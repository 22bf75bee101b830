package stats

import (
	"mime"
	"net/netip"
	"path"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Keys for values a page does not have.
const (
	keyNone   = "(none)"    // no Server / Content-Type header, no extension
	keyBadURL = "(bad URL)" // the stored URL has no host
	keyIP     = "(ip)"      // the suffix of a host given as an IP address
	keyOther  = "(other)"   // rows beyond the table's limit
)

// hostClass is where a host name sits in the domain name space.
type hostClass struct {
	// suffix is the host's public suffix under ICANN rules: "ac.th", "co.th",
	// "com". Private suffixes of the Public Suffix List (github.io,
	// blogspot.com) are not used: they would split one registry's domains
	// into rows the thesis's tables never had.
	suffix string
	// domain is the registrable domain: the label before suffix plus suffix
	// ("ku.ac.th"), the host itself when it is a suffix or an IP address.
	domain string
}

// classifyHost returns the class of a lower-case host name (no port).
func classifyHost(host string) hostClass {
	if host == "" {
		return hostClass{keyBadURL, keyBadURL}
	}
	if strings.HasPrefix(host, "[") || isIPv4(host) {
		return hostClass{keyIP, host}
	}
	host = strings.TrimSuffix(host, ".")
	suffix, icann := publicsuffix.PublicSuffix(host)
	for !icann {
		_, rest, ok := strings.Cut(suffix, ".")
		if !ok {
			break // a TLD the list does not know: keep it as it is
		}
		suffix, icann = publicsuffix.PublicSuffix(rest)
	}
	domain := host
	if len(host) > len(suffix) {
		head := host[:len(host)-len(suffix)-1]
		domain = head[strings.LastIndexByte(head, '.')+1:] + "." + suffix
	}
	return hostClass{suffix, domain}
}

func isIPv4(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is4()
}

// hostOf returns the lower-case host of an absolute URL without parsing all of
// it: the authority after "scheme://" minus userinfo and port. Canonical URLs
// (what spider/links returns) are already lower-case.
func hostOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	auth := u[i+3:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	if j := strings.LastIndexByte(auth, '@'); j >= 0 {
		auth = auth[j+1:]
	}
	if strings.HasPrefix(auth, "[") {
		if j := strings.IndexByte(auth, ']'); j >= 0 {
			return strings.ToLower(auth[:j+1])
		}
		return ""
	}
	if j := strings.LastIndexByte(auth, ':'); j >= 0 {
		auth = auth[:j]
	}
	return strings.ToLower(auth)
}

// extensionOf returns the lower-case file extension of a URL's path (".html",
// ".php"), keyNone for a path whose last segment has none (a directory, "/"),
// keyOther for one too long or not alphanumeric to be a file type.
func extensionOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
		j := strings.IndexByte(u, '/')
		if j < 0 {
			return keyNone
		}
		u = u[j:]
	}
	if j := strings.IndexAny(u, "?#"); j >= 0 {
		u = u[:j]
	}
	ext := path.Ext(u[strings.LastIndexByte(u, '/')+1:])
	if ext == "" || ext == "." {
		return keyNone
	}
	if len(ext) > 8 {
		return keyOther
	}
	for i := 1; i < len(ext); i++ {
		c := ext[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return keyOther
		}
	}
	return strings.ToLower(ext)
}

// serverProduct returns the product name of a Server header ("Apache" for
// "Apache/2.4.57 (Debian)"), the unit the thesis's server table counts.
func serverProduct(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return keyNone
	}
	if i := strings.IndexAny(v, "/ \t("); i > 0 {
		v = v[:i]
	}
	if len(v) > 40 {
		v = v[:40]
	}
	return v
}

// mediaType returns the lower-case media type of a Content-Type header, and
// its charset parameter (lower case, "" if none).
func mediaType(v string) (typ, charset string) {
	if strings.TrimSpace(v) == "" {
		return keyNone, ""
	}
	t, params, err := mime.ParseMediaType(v)
	if err != nil {
		// Take what precedes the parameters: servers send "text/html;;".
		t, _, _ = strings.Cut(v, ";")
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || len(t) > 80 {
			return keyOther, ""
		}
		return t, ""
	}
	return t, strings.ToLower(params["charset"])
}

// isHTML reports whether a media type is an HTML document.
func isHTML(typ string) bool {
	return typ == "text/html" || typ == "application/xhtml+xml"
}

// A bucketing is a distribution's fixed classes: class i holds values v with
// bounds[i-1] <= v < bounds[i] (the last class is unbounded).
type bucketing struct {
	bounds []int64
	labels []string
}

func (b *bucketing) index(v int64) int {
	for i, bound := range b.bounds {
		if v < bound {
			return i
		}
	}
	return len(b.bounds)
}

// linkBuckets classes pages by outgoing links.
var linkBuckets = bucketing{
	bounds: []int64{1, 10, 20, 50, 100, 200, 500},
	labels: []string{"0", "1-9", "10-19", "20-49", "50-99", "100-199", "200-499", "500+"},
}

// sizeBuckets classes pages by body bytes.
var sizeBuckets = bucketing{
	bounds: []int64{1, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20},
	labels: []string{"0", "<1 KiB", "1-4 KiB", "4-16 KiB", "16-64 KiB", "64-256 KiB", "256 KiB-1 MiB", ">=1 MiB"},
}

// timeBuckets classes pages by fetch duration.
var timeBuckets = bucketing{
	bounds: []int64{int64(10 * time.Millisecond), int64(50 * time.Millisecond), int64(100 * time.Millisecond),
		int64(250 * time.Millisecond), int64(500 * time.Millisecond), int64(time.Second), int64(2 * time.Second), int64(5 * time.Second)},
	labels: []string{"<10 ms", "10-50 ms", "50-100 ms", "100-250 ms", "250-500 ms", "0.5-1 s", "1-2 s", "2-5 s", ">=5 s"},
}
