package urlnorm

// Parse parses an absolute URL as a browser does (layer 1).
func Parse(input string) (*URL, error) { return ParseRef(nil, input) }

// ParseRef parses input against base (nil for none) as a browser resolves
// a link: the result of new URL(input, base).
func ParseRef(base *URL, input string) (*URL, error) {
	buf, p, err := appendParse(nil, base, input)
	if err != nil {
		return nil, wrap(ReasonInvalid, input, err)
	}
	return p.url(string(buf)), nil
}

// AppendHref appends the href of input resolved against base to dst
// without building a URL; on error dst is returned unchanged.
func AppendHref(dst []byte, base *URL, input string) ([]byte, error) {
	buf, _, err := appendParse(dst, base, input)
	if err != nil {
		return dst, wrap(ReasonInvalid, input, err)
	}
	return buf, nil
}

func wrap(r Reason, input string, err error) error {
	return &Error{Reason: r, Input: input, Detail: err.Error()}
}

// url makes the URL of a finished parse whose href is buf[p.off:].
func (p *parser) url(href string) *URL {
	o := p.off
	return &URL{
		href:          href,
		schemeEnd:     p.schemeEnd - o,
		usernameEnd:   p.usernameEnd - o,
		hostStart:     p.hostStart - o,
		hostEnd:       p.hostEnd - o,
		authorityEnd:  p.authorityEnd - o,
		pathStart:     p.pathStart - o,
		queryStart:    shift(p.queryStart, -o),
		fragmentStart: shift(p.fragmentStart, -o),
		port:          p.port,
		segments:      p.segments,
		hasHost:       p.hasHost,
		opaquePath:    p.opaquePath,
		scheme:        p.scheme,
	}
}
