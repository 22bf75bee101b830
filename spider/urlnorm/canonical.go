package urlnorm

import "strconv"

// Options configures the canonical form beyond its fixed rules. The zero
// value (and a nil *Options) is the default: nothing optional is done.
type Options struct {
	// StripSessionIDs removes session ids: a ";jsessionid=..." path
	// parameter and query parameters named like a session id (see
	// isSessionParam). Off by default: on a site that needs the id in the
	// URL it merges pages of different sessions, which is the point, but
	// it may also hit a parameter that is not a session id.
	StripSessionIDs bool
	// SortQuery sorts the query parameters by name, keeping the order of
	// parameters with the same name. Off by default: order matters to
	// some servers.
	SortQuery bool
	// MaxLength, when positive, rejects canonical URLs longer than this
	// many bytes with ReasonTooLong.
	MaxLength int
}

// Canonical returns the canonical form of ref resolved against base (nil
// for none).
func Canonical(base *URL, ref string, opts *Options) (string, error) {
	b, err := AppendCanonical(nil, base, ref, opts)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendCanonical appends the canonical form of ref resolved against base
// (nil for none) to dst. It is the crawler's hot path: for an ASCII host
// it allocates nothing beyond growing dst. On error dst is returned
// unchanged and the error is an *Error whose Reason says why.
//
// The canonical form is the WHATWG href (layer 1) with the fragment and
// the credentials dropped, a host's trailing dots dropped, escapes of
// unreserved characters decoded, all other escapes in upper case, an empty
// query dropped, and then the options applied. Layer 1 already lower-cases the host, drops the
// default port and writes "/" for an empty http(s) path.
func AppendCanonical(dst []byte, base *URL, ref string, opts *Options) ([]byte, error) {
	buf, p, err := appendParse(dst, base, ref)
	if err != nil {
		return dst, wrap(ReasonInvalid, ref, err)
	}
	if p.scheme != schemeHTTP && p.scheme != schemeHTTPS {
		return dst, &Error{Reason: ReasonScheme, Input: ref,
			Detail: "scheme " + strconv.Quote(string(buf[p.off:p.schemeEnd])) + " is not http or https"}
	}
	if p.hostEnd == p.hostStart {
		// The parser refuses empty http(s) hosts; kept as a guard for the
		// URL tree, which must never get a host-less key.
		return dst, &Error{Reason: ReasonNoHost, Input: ref, Detail: "empty host"}
	}
	if opts == nil {
		opts = &Options{}
	}
	// Rewrite in place: every step writes at w <= the position it reads.
	w := p.schemeEnd + 3 // after "://"
	w += copy(buf[w:], buf[p.hostStart:foldRootDots(buf, p.hostStart, p.hostEnd)])
	w += copy(buf[w:], buf[p.hostEnd:p.authorityEnd])
	pathEnd := len(buf)
	if p.fragmentStart >= 0 {
		pathEnd = p.fragmentStart
	}
	queryEnd := pathEnd
	if p.queryStart >= 0 {
		pathEnd = p.queryStart
	}
	pathStart := w
	w = normalizeEscapes(buf, w, p.pathStart, pathEnd)
	if opts.StripSessionIDs {
		w = pathStart + stripPathSessionIDs(buf[pathStart:w])
	}
	if p.queryStart >= 0 && queryEnd > p.queryStart+1 {
		buf[w] = '?'
		w++
		qStart := w
		w = normalizeEscapes(buf, w, p.queryStart+1, queryEnd)
		if opts.StripSessionIDs {
			w = qStart + stripQuerySessionIDs(buf[qStart:w])
		}
		if opts.SortQuery {
			buf, w = sortQuery(buf, qStart, w)
		}
		if w == qStart {
			w-- // the query became empty: drop the "?"
		}
	}
	buf = buf[:w]
	if opts.MaxLength > 0 && len(buf)-p.off > opts.MaxLength {
		return dst, &Error{Reason: ReasonTooLong, Input: ref,
			Detail: "canonical form is " + strconv.Itoa(len(buf)-p.off) + " bytes, over the limit of " + strconv.Itoa(opts.MaxLength)}
	}
	return buf, nil
}

// foldRootDots returns where the domain buf[start:end] ends without its
// trailing dots: "example.com." names the DNS root's example.com, the name
// "example.com" resolves to as well, and kept apart the two were two hosts
// to the crawl, each crawled in full, their server asked twice as often as
// the politeness delay allows. A host of dots alone is left as it is (no
// name would remain), and so is one whose last label is a number once its
// dots are gone ("foo.09.." would read as an invalid IPv4 address).
func foldRootDots(buf []byte, start, end int) int {
	e := end
	for e > start && buf[e-1] == '.' {
		e--
	}
	if e == start || e < end && endsInNumber(buf[start:e]) {
		return end
	}
	return e
}

// normalizeEscapes copies buf[r:end] to buf[w:], decoding escapes of
// unreserved characters and upper-casing the hex of the others, and
// returns the new w. Escapes of reserved characters stay escapes: %2F is
// a different resource from "/".
//
// A decoded hex digit could complete a bare "%" before it into a new
// escape ("%%61A" would read "%aA"), so such a digit stays escaped.
func normalizeEscapes(buf []byte, w, r, end int) int {
	start := w
	for r < end {
		c := buf[r]
		if c == '%' && r+2 < end {
			hi, ok1 := unhex(buf[r+1])
			lo, ok2 := unhex(buf[r+2])
			if ok1 && ok2 {
				v := hi<<4 | lo
				if isUnreserved(v) && !completesEscape(buf, start, w, v) {
					buf[w] = v
					w++
				} else {
					buf[w], buf[w+1], buf[w+2] = '%', upperHex[hi], upperHex[lo]
					w += 3
				}
				r += 3
				continue
			}
		}
		buf[w] = c
		w++
		r++
	}
	return w
}

// completesEscape reports whether writing v at buf[w] would make an
// escape of a bare "%" written before it (buf[lo:w] is the output so far).
func completesEscape(buf []byte, lo, w int, v byte) bool {
	if _, hex := unhex(v); !hex {
		return false
	}
	if w-1 >= lo && buf[w-1] == '%' {
		return true
	}
	_, prevHex := unhex(buf[max(w-1, 0)])
	return w-2 >= lo && buf[w-2] == '%' && prevHex
}

// isUnreserved: RFC 3986 §2.3 unreserved characters, whose escapes are
// equivalent to themselves.
func isUnreserved(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}
