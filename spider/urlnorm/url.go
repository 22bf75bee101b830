package urlnorm

// URL is a parsed URL record (WHATWG URL Standard §4.1) kept as its
// serialisation, href, plus the offsets of its components, so that reading
// a component never allocates and a base URL is copied into a relative
// one's output by slicing. A URL is immutable and safe for concurrent use.
//
// Layout of href, every part but the scheme optional:
//
//	scheme ":" ["//" [username [":" password] "@"] host [":" port]] ["/."] path ["?" query] ["#" fragment]
//	      ^schemeEnd       ^usernameEnd  ^hostStart ^hostEnd ^authorityEnd ^pathStart ^queryStart ^fragmentStart
//
// "/." only appears for a URL without host whose path begins with an empty
// segment; it is not part of the path.
type URL struct {
	href          string
	schemeEnd     int // href[schemeEnd] == ':'
	usernameEnd   int
	hostStart     int
	hostEnd       int
	authorityEnd  int // after the port; == pathStart unless "/." precedes the path
	pathStart     int
	queryStart    int // index of '?', or -1
	fragmentStart int // index of '#', or -1
	port          int // -1 when the URL has no port (or the scheme's default)
	segments      int // number of path segments; unused for an opaque path
	hasHost       bool
	opaquePath    bool
	scheme        schemeKind
}

// schemeKind tells the special schemes apart from all others.
type schemeKind uint8

const (
	schemeOther schemeKind = iota
	schemeHTTP
	schemeHTTPS
	schemeWS
	schemeWSS
	schemeFTP
	schemeFile
)

func schemeKindOf(s []byte) schemeKind {
	switch string(s) {
	case "http":
		return schemeHTTP
	case "https":
		return schemeHTTPS
	case "ws":
		return schemeWS
	case "wss":
		return schemeWSS
	case "ftp":
		return schemeFTP
	case "file":
		return schemeFile
	}
	return schemeOther
}

func (k schemeKind) special() bool { return k != schemeOther }

func (k schemeKind) defaultPort() int {
	switch k {
	case schemeHTTP, schemeWS:
		return 80
	case schemeHTTPS, schemeWSS:
		return 443
	case schemeFTP:
		return 21
	}
	return -1
}

// Href is the URL serialised, what a browser's URL.href returns.
func (u *URL) Href() string { return u.href }

func (u *URL) String() string { return u.href }

// Scheme is the scheme in lower case, without the colon.
func (u *URL) Scheme() string { return u.href[:u.schemeEnd] }

// IsSpecial reports whether the scheme is one of the standard's special
// schemes (http, https, ws, wss, ftp, file).
func (u *URL) IsSpecial() bool { return u.scheme.special() }

// HasHost reports whether the URL has a host (possibly empty, as in file:///).
func (u *URL) HasHost() bool { return u.hasHost }

// HasOpaquePath reports whether the path is opaque (mailto:x, data:...).
func (u *URL) HasOpaquePath() bool { return u.opaquePath }

// Username is the percent-encoded username, or "".
func (u *URL) Username() string {
	if !u.hasHost {
		return ""
	}
	return u.href[u.schemeEnd+3 : u.usernameEnd]
}

// Password is the percent-encoded password, or "".
func (u *URL) Password() string {
	if !u.hasHost || u.usernameEnd >= u.hostStart-1 {
		return ""
	}
	return u.href[u.usernameEnd+1 : u.hostStart-1]
}

// Hostname is the serialised host: a lower-case ASCII domain, an IPv4
// address, an IPv6 address in brackets, or an opaque host.
func (u *URL) Hostname() string { return u.href[u.hostStart:u.hostEnd] }

// Host is the hostname and, when there is one, ":" and the port.
func (u *URL) Host() string {
	if u.port < 0 {
		return u.Hostname()
	}
	return u.href[u.hostStart:u.authorityEnd]
}

// Port is the port in decimal, "" when absent or the scheme's default.
func (u *URL) Port() string {
	if u.port < 0 {
		return ""
	}
	return u.href[u.hostEnd+1 : u.authorityEnd]
}

// PortNumber is the port, or -1 when absent or the scheme's default.
func (u *URL) PortNumber() int { return u.port }

func (u *URL) pathEnd() int {
	if u.queryStart >= 0 {
		return u.queryStart
	}
	if u.fragmentStart >= 0 {
		return u.fragmentStart
	}
	return len(u.href)
}

// Pathname is the path as URL.pathname gives it.
func (u *URL) Pathname() string { return u.href[u.pathStart:u.pathEnd()] }

// HasQuery reports whether the URL has a query (possibly empty: "x?").
func (u *URL) HasQuery() bool { return u.queryStart >= 0 }

// Query is the query without "?", "" when absent.
func (u *URL) Query() string {
	if u.queryStart < 0 {
		return ""
	}
	end := len(u.href)
	if u.fragmentStart >= 0 {
		end = u.fragmentStart
	}
	return u.href[u.queryStart+1 : end]
}

// Search is URL.search: "?" and the query, "" when the query is absent or
// empty.
func (u *URL) Search() string {
	q := u.Query()
	if q == "" {
		return ""
	}
	return u.href[u.queryStart : u.queryStart+1+len(q)]
}

// HasFragment reports whether the URL has a fragment (possibly empty).
func (u *URL) HasFragment() bool { return u.fragmentStart >= 0 }

// Fragment is the fragment without "#", "" when absent.
func (u *URL) Fragment() string {
	if u.fragmentStart < 0 {
		return ""
	}
	return u.href[u.fragmentStart+1:]
}

// Hash is URL.hash: "#" and the fragment, "" when absent or empty.
func (u *URL) Hash() string {
	if u.fragmentStart < 0 || u.fragmentStart == len(u.href)-1 {
		return ""
	}
	return u.href[u.fragmentStart:]
}
