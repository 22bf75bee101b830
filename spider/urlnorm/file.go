package urlnorm

// file is the "file" state. file: URLs always have a host, maybe empty.
// The crawler never fetches them; they are parsed so that a page's links
// to them are recognised and dropped for their scheme, not as garbage.
func (p *parser) file(s string) error {
	b := p.base
	if b != nil && b.scheme != schemeFile {
		b = nil
	}
	if len(s) > 0 && (s[0] == '/' || s[0] == '\\') {
		return p.fileSlash(s[1:], b)
	}
	if b == nil {
		p.emptyFileHost()
		return p.path(s)
	}
	p.copyBase(b.pathEnd())
	switch {
	case s == "" || s[0] == '#':
		p.copyBaseQuery()
		if s == "" {
			return nil
		}
		return p.fragment(s[1:])
	case s[0] == '?':
		return p.query(s[1:])
	}
	if startsWithDriveLetter(s) {
		p.buf = p.buf[:p.pathStart]
		p.segments = 0
	} else {
		p.shortenPath()
	}
	return p.path(s)
}

// emptyFileHost writes "//" and an empty host.
func (p *parser) emptyFileHost() {
	p.buf = append(p.buf[:p.schemeEnd+1], '/', '/')
	p.hasHost = true
	n := len(p.buf)
	p.usernameEnd, p.hostStart, p.hostEnd, p.authorityEnd, p.pathStart = n, n, n, n, n
	p.segments = 0
}

// fileSlash is the "file slash" state.
func (p *parser) fileSlash(s string, b *URL) error {
	if len(s) > 0 && (s[0] == '/' || s[0] == '\\') {
		return p.fileHost(s[1:])
	}
	if b == nil {
		p.emptyFileHost()
		return p.path(s)
	}
	p.copyBase(b.authorityEnd)
	if !startsWithDriveLetter(s) {
		bp := b.href[b.pathStart:b.pathEnd()]
		if len(bp) >= 3 && (len(bp) == 3 || bp[3] == '/') && isNormalizedDriveLetter([]byte(bp[1:3])) {
			p.buf = append(p.buf, bp[:3]...)
			p.segments = 1
		}
	}
	return p.path(s)
}

// fileHost is the "file host" state.
func (p *parser) fileHost(s string) error {
	end := 0
	for end < len(s) && s[end] != '/' && s[end] != '\\' && s[end] != '?' && s[end] != '#' {
		end++
	}
	host := s[:end]
	p.emptyFileHost()
	if isWindowsDriveLetter([]byte(host)) {
		// The drive letter quirk: "file://C:/x" is a path, not a host.
		return p.path(s)
	}
	if host != "" {
		var err error
		p.buf, err = appendHost(p.buf, host, true)
		if err != nil {
			return err
		}
		if string(p.buf[p.hostStart:]) == "localhost" {
			p.buf = p.buf[:p.hostStart]
		}
		n := len(p.buf)
		p.hostEnd, p.authorityEnd, p.pathStart = n, n, n
	}
	return p.pathStartState(s[end:])
}
