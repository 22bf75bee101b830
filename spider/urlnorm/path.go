package urlnorm

// path is the "path" state: s is the rest of the input from the first code
// point of a segment; the segments are appended to the path built so far.
func (p *parser) path(s string) error {
	special := p.scheme.special()
	for {
		end := 0
		for end < len(s) && s[end] != '/' && s[end] != '?' && s[end] != '#' && !(special && s[end] == '\\') {
			end++
		}
		segStart := len(p.buf)
		p.buf = append(p.buf, '/')
		p.buf = appendEncoded(p.buf, s[:end], &pathSet)
		seg := p.buf[segStart+1:]
		slash := end < len(s) && (s[end] == '/' || special && s[end] == '\\')
		switch {
		case isDoubleDot(seg):
			p.buf = p.buf[:segStart]
			p.shortenPath()
			if !slash {
				p.buf = append(p.buf, '/')
				p.segments++
			}
		case isSingleDot(seg):
			p.buf = p.buf[:segStart]
			if !slash {
				p.buf = append(p.buf, '/')
				p.segments++
			}
		default:
			if p.scheme == schemeFile && p.segments == 0 && isWindowsDriveLetter(seg) {
				seg[1] = ':'
			}
			p.segments++
		}
		if !slash {
			s = s[end:]
			break
		}
		s = s[end+1:]
	}
	switch {
	case s == "":
		return nil
	case s[0] == '?':
		return p.query(s[1:])
	default: // '#'
		return p.fragment(s[1:])
	}
}

// shortenPath removes the last path segment, except a file URL's drive
// letter.
func (p *parser) shortenPath() {
	if p.segments == 0 {
		return
	}
	path := p.buf[p.pathStart:]
	if p.scheme == schemeFile && p.segments == 1 && len(path) == 3 && isNormalizedDriveLetter(path[1:]) {
		return
	}
	i := len(path) - 1
	for path[i] != '/' {
		i--
	}
	p.buf = p.buf[:p.pathStart+i]
	p.segments--
}

func isSingleDot(seg []byte) bool {
	switch len(seg) {
	case 1:
		return seg[0] == '.'
	case 3:
		return isPercent2e(seg)
	}
	return false
}

func isDoubleDot(seg []byte) bool {
	switch len(seg) {
	case 2:
		return seg[0] == '.' && seg[1] == '.'
	case 4:
		return seg[0] == '.' && isPercent2e(seg[1:]) || isPercent2e(seg) && seg[3] == '.'
	case 6:
		return isPercent2e(seg) && isPercent2e(seg[3:])
	}
	return false
}

func isPercent2e(s []byte) bool {
	return len(s) >= 3 && s[0] == '%' && s[1] == '2' && (s[2] == 'e' || s[2] == 'E')
}

func isWindowsDriveLetter(s []byte) bool {
	return len(s) == 2 && isAlpha(s[0]) && (s[1] == ':' || s[1] == '|')
}

func isNormalizedDriveLetter(s []byte) bool {
	return len(s) == 2 && isAlpha(s[0]) && s[1] == ':'
}

// startsWithDriveLetter: two code points that are a drive letter, then
// the end or one of / \ ? #.
func startsWithDriveLetter(s string) bool {
	if len(s) < 2 || !isWindowsDriveLetter([]byte(s[:2])) {
		return false
	}
	if len(s) == 2 {
		return true
	}
	switch s[2] {
	case '/', '\\', '?', '#':
		return true
	}
	return false
}

// opaque is the "opaque path" state.
func (p *parser) opaque(s string) error {
	p.opaquePath = true
	end := 0
	for end < len(s) && s[end] != '?' && s[end] != '#' {
		end++
	}
	p.buf = appendEncoded(p.buf, s[:end], &c0ControlSet)
	switch {
	case end == len(s):
		return nil
	case s[end] == '?':
		return p.query(s[end+1:])
	default:
		return p.fragment(s[end+1:])
	}
}

// query is the "query" state.
func (p *parser) query(s string) error {
	end := 0
	for end < len(s) && s[end] != '#' {
		end++
	}
	p.queryStart = len(p.buf)
	p.buf = append(p.buf, '?')
	set := &querySet
	if p.scheme.special() {
		set = &specialQuerySet
	}
	p.buf = appendEncoded(p.buf, s[:end], set)
	if end < len(s) {
		return p.fragment(s[end+1:])
	}
	return nil
}

// fragment is the "fragment" state.
func (p *parser) fragment(s string) error {
	p.fragmentStart = len(p.buf)
	p.buf = append(p.buf, '#')
	p.buf = appendEncoded(p.buf, s, &fragmentSet)
	return nil
}

// finish writes "/." before a host-less path that starts with an empty
// segment, so that the href does not read as an authority (§4.5 step 3).
func (p *parser) finish() {
	if p.hasHost || p.opaquePath || p.segments < 2 || p.buf[p.pathStart+1] != '/' {
		return
	}
	p.buf = append(p.buf, 0, 0)
	copy(p.buf[p.pathStart+2:], p.buf[p.pathStart:])
	p.buf[p.pathStart], p.buf[p.pathStart+1] = '/', '.'
	p.pathStart += 2
	if p.queryStart >= 0 {
		p.queryStart += 2
	}
	if p.fragmentStart >= 0 {
		p.fragmentStart += 2
	}
}
