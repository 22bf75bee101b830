package urlnorm

import (
	"strconv"
	"strings"
)

// parser is one run of the basic URL parser (§4.4) without state override.
// It appends the serialisation to buf while it parses, as the components
// come in the order they are serialised, and records their offsets, so
// that the result is ready without a separate serialisation pass.
//
// The standard's state machine is followed state by state, but each state
// consumes its whole component at once instead of one code point per turn.
type parser struct {
	buf  []byte
	off  int // where this URL starts in buf
	base *URL

	scheme        schemeKind
	schemeEnd     int
	usernameEnd   int
	hostStart     int
	hostEnd       int
	authorityEnd  int
	pathStart     int
	queryStart    int
	fragmentStart int
	port          int
	segments      int
	hasHost       bool
	opaquePath    bool
}

// trimInput removes leading and trailing C0 controls and spaces and every
// tab and newline (§4.4 steps 1-3). It allocates only when a tab or
// newline is inside.
func trimInput(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	s = s[i:j]
	if hasTabOrNewline(s) {
		b := make([]byte, 0, len(s))
		for k := 0; k < len(s); k++ {
			if c := s[k]; c != '\t' && c != '\n' && c != '\r' {
				b = append(b, c)
			}
		}
		s = string(b)
	}
	return s
}

func hasTabOrNewline(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= '\r' && (c == '\t' || c == '\n' || c == '\r') {
			return true
		}
	}
	return false
}

// appendParse parses input against base (nil for none) and appends the
// URL's href to dst. On failure dst is returned unchanged.
func appendParse(dst []byte, base *URL, input string) ([]byte, parser, error) {
	p := parser{buf: dst, off: len(dst), base: base, queryStart: -1, fragmentStart: -1, port: -1}
	err := p.parse(trimInput(input))
	if err != nil {
		return dst, p, err
	}
	p.finish()
	return p.buf, p, nil
}

func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parse runs the states from "scheme start".
func (p *parser) parse(s string) error {
	// scheme start and scheme states
	if len(s) > 0 && isAlpha(s[0]) {
		i := 1
		for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.') {
			i++
		}
		if i < len(s) && s[i] == ':' {
			for _, c := range []byte(s[:i]) {
				p.buf = append(p.buf, c|lowerBit(c))
			}
			p.scheme = schemeKindOf(p.buf[p.off:])
			p.schemeEnd = len(p.buf)
			p.buf = append(p.buf, ':')
			return p.afterScheme(s[i+1:])
		}
	}
	return p.noScheme(s)
}

// lowerBit is the bit that makes an upper-case ASCII letter lower case.
func lowerBit(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return 0x20
	}
	return 0
}

// afterScheme continues the scheme state after the ":".
func (p *parser) afterScheme(rest string) error {
	b := p.base
	switch {
	case p.scheme == schemeFile:
		return p.file(rest)
	case p.scheme.special():
		if b != nil && b.scheme == p.scheme && b.Scheme() == string(p.buf[p.off:p.schemeEnd]) {
			// special relative or authority state
			if strings.HasPrefix(rest, "//") {
				return p.authority(skipSlashes(rest, true))
			}
			return p.relative(rest)
		}
		// special authority slashes, special authority ignore slashes
		return p.authority(skipSlashes(rest, true))
	case strings.HasPrefix(rest, "/"):
		// path or authority state
		if strings.HasPrefix(rest[1:], "/") {
			return p.authority(rest[2:])
		}
		p.noAuthority()
		return p.path(rest[1:])
	default:
		p.noAuthority()
		return p.opaque(rest)
	}
}

// skipSlashes skips the slashes (and, in special schemes, backslashes)
// the "special authority ignore slashes" state ignores.
func skipSlashes(s string, special bool) string {
	i := 0
	for i < len(s) && (s[i] == '/' || special && s[i] == '\\') {
		i++
	}
	return s[i:]
}

// noScheme is the "no scheme" state.
func (p *parser) noScheme(s string) error {
	b := p.base
	if b == nil {
		return errNoBase
	}
	if b.opaquePath {
		if !strings.HasPrefix(s, "#") {
			return errOpaqueBase
		}
		end := len(b.href)
		if b.fragmentStart >= 0 {
			end = b.fragmentStart
		}
		p.copyBase(end)
		p.opaquePath = true
		p.queryStart = shift(b.queryStart, p.off)
		return p.fragment(s[1:])
	}
	p.buf = append(p.buf, b.href[:b.schemeEnd+1]...)
	p.scheme, p.schemeEnd = b.scheme, p.off+b.schemeEnd
	if b.scheme == schemeFile {
		return p.file(s)
	}
	return p.relative(s)
}

func shift(i, off int) int {
	if i < 0 {
		return -1
	}
	return i + off
}

// copyBase makes the URL so far the base's href up to end, with the
// base's offsets: the scheme is the base's, so the layout is the same.
func (p *parser) copyBase(end int) {
	b := p.base
	p.buf = append(p.buf[:p.off], b.href[:min(end, b.authorityEnd)]...)
	p.scheme, p.schemeEnd = b.scheme, p.off+b.schemeEnd
	p.hasHost = b.hasHost
	p.usernameEnd, p.hostStart, p.hostEnd = p.off+b.usernameEnd, p.off+b.hostStart, p.off+b.hostEnd
	p.authorityEnd, p.port = p.off+b.authorityEnd, b.port
	p.pathStart = len(p.buf)
	p.segments = 0
	if end > b.authorityEnd {
		// Without the "/." of a host-less base: finish adds it back
		// if the result needs it.
		p.buf = append(p.buf, b.href[b.pathStart:end]...)
		p.segments = b.segments
	}
}

// relative is the "relative" state: scheme is the base's.
func (p *parser) relative(s string) error {
	b := p.base
	special := p.scheme.special()
	if len(s) > 0 && (s[0] == '/' || special && s[0] == '\\') {
		// relative slash state
		t := s[1:]
		if len(t) > 0 && (t[0] == '/' || special && t[0] == '\\') {
			if special {
				return p.authority(skipSlashes(t, true))
			}
			return p.authority(t[1:])
		}
		p.copyBase(b.authorityEnd)
		return p.path(t)
	}
	p.copyBase(b.pathEnd())
	switch {
	case s == "":
		p.copyBaseQuery()
		return nil
	case s[0] == '?':
		return p.query(s[1:])
	case s[0] == '#':
		p.copyBaseQuery()
		return p.fragment(s[1:])
	}
	p.shortenPath()
	return p.path(s)
}

// copyBaseQuery appends the base's query, if it has one.
func (p *parser) copyBaseQuery() {
	b := p.base
	if b.queryStart < 0 {
		return
	}
	end := len(b.href)
	if b.fragmentStart >= 0 {
		end = b.fragmentStart
	}
	p.queryStart = len(p.buf)
	p.buf = append(p.buf, b.href[b.queryStart:end]...)
}

// noAuthority records a URL without host: the path follows the scheme.
func (p *parser) noAuthority() {
	p.usernameEnd, p.hostStart, p.hostEnd = len(p.buf), len(p.buf), len(p.buf)
	p.authorityEnd, p.pathStart = len(p.buf), len(p.buf)
}

// authority is the "authority", "host" and "port" states, then "path
// start". s starts right after the slashes.
func (p *parser) authority(s string) error {
	special := p.scheme.special()
	end := 0
	for end < len(s) && s[end] != '/' && s[end] != '?' && s[end] != '#' && !(special && s[end] == '\\') {
		end++
	}
	auth, rest := s[:end], s[end:]
	p.buf = append(p.buf[:p.schemeEnd+1], '/', '/')
	p.hasHost = true
	hostport := auth
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		hostport = auth[at+1:]
		if hostport == "" {
			return errEmptyHost
		}
		userinfo := auth[:at]
		user, pass, hasPass := strings.Cut(userinfo, ":")
		mark := len(p.buf)
		p.buf = appendEncoded(p.buf, user, &userinfoSet)
		p.usernameEnd = len(p.buf)
		if hasPass && pass != "" {
			p.buf = append(p.buf, ':')
			p.buf = appendEncoded(p.buf, pass, &userinfoSet)
		}
		if len(p.buf) > mark {
			p.buf = append(p.buf, '@')
		}
	} else {
		p.usernameEnd = len(p.buf)
	}
	// host state: a ":" inside brackets is part of an IPv6 address
	host, port, hasPort := hostport, "", false
	inBrackets := false
	for i := 0; i < len(hostport); i++ {
		switch hostport[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				host, port, hasPort = hostport[:i], hostport[i+1:], true
			}
		}
		if hasPort {
			break
		}
	}
	if host == "" && (special || hasPort) {
		return errEmptyHost
	}
	p.hostStart = len(p.buf)
	var err error
	if p.buf, err = appendHost(p.buf, host, special); err != nil {
		return err
	}
	p.hostEnd = len(p.buf)
	if hasPort && port != "" {
		v := 0
		for i := 0; i < len(port); i++ {
			if !isDigit(port[i]) {
				return errPort
			}
			if v = v*10 + int(port[i]-'0'); v > 65535 {
				return errPort
			}
		}
		if v != p.scheme.defaultPort() {
			p.port = v
			p.buf = append(p.buf, ':')
			p.buf = strconv.AppendInt(p.buf, int64(v), 10)
		}
	}
	p.authorityEnd = len(p.buf)
	p.pathStart = len(p.buf)
	p.segments = 0
	return p.pathStartState(rest)
}

// pathStartState is the "path start" state after an authority.
func (p *parser) pathStartState(s string) error {
	if p.scheme.special() {
		if len(s) > 0 && (s[0] == '/' || s[0] == '\\') {
			s = s[1:]
		}
		return p.path(s)
	}
	switch {
	case s == "":
		return nil
	case s[0] == '?':
		return p.query(s[1:])
	case s[0] == '#':
		return p.fragment(s[1:])
	case s[0] == '/':
		return p.path(s[1:])
	}
	return p.path(s)
}
