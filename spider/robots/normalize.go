package robots

import "strings"

// The percent-encoding normal form patterns and paths are compared in
// (RFC 9309 section 2.2.2): octets outside printable US-ASCII (controls,
// space, DEL, 0x80-0xFF) are percent-encoded, and so are the printable
// octets RFC 3986 allows nowhere in a URI (" < > \ ^ ` { | }), which a URI
// can only carry encoded, so that "Disallow: /a%7Cb" matches the path
// "/a|b" (a canonical URL keeps '|' and '^' raw, as WHATWG does) and
// "Disallow: /a|b" the path "/a%7cb"; escapes get upper-case hex;
// escapes of unreserved characters (RFC 3986: ALPHA DIGIT - . _ ~) are
// decoded, so "/%7Ea" and "/~a" are one path while "%2F" and "/" stay two.
// A '%' not followed by two hex digits is left alone. Patterns and paths use
// the same form, with one difference: '*' and '$' are special in a pattern
// (a wildcard, and an anchor when final), so a rule writes them %2A and %24
// to mean the octets, and RFC 9309 section 2.2.3 has "/path/foo-%24" match
// the URL ".../path/foo-$". A path's '*' and '$' are therefore encoded, and
// so is a pattern's '$' that is not final; the form never decodes %2A or
// %24, nor creates a '*' or a '$'.

const upperHex = "0123456789ABCDEF"

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// mustEncode reports whether a raw octet is encoded in the normal form of
// a path, or, with wild, of a pattern (whose '*' is the wildcard; its final
// '$' is cut off before).
func mustEncode(c byte, wild bool) bool {
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}', '$':
		return true
	case '*':
		return !wild
	}
	return c <= 0x20 || c >= 0x7F
}

// isNormal reports whether s is already in the normal form, the common case
// for a crawler's canonical URLs, which lets a check skip the copy.
func isNormal(s string, wild bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEncode(c, wild) {
			return false
		}
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			h, l := s[i+1], s[i+2]
			if 'a' <= h || 'a' <= l || isUnreserved(unhex(h)<<4|unhex(l)) {
				return false
			}
			i += 2
		}
	}
	return true
}

// appendNormal appends the normal form of s to dst: of a path, or, with
// wild, of a pattern without its final '$'.
func appendNormal(dst []byte, s string, wild bool) []byte {
	start := len(dst)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case mustEncode(c, wild):
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) && !completesEscape(dst[start:], v) {
				dst = append(dst, v)
			} else {
				dst = append(dst, '%', upperHex[v>>4], upperHex[v&15])
			}
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// completesEscape reports whether appending v to out would make an escape
// of a bare '%' before it: "/%%41" decoded to "/%A", and "/%%414" to
// "/%A4", which is the path "/%A4" (as urlnorm's canonical form, which
// keeps such a digit escaped too).
func completesEscape(out []byte, v byte) bool {
	if !isHex(v) {
		return false
	}
	n := len(out)
	return n >= 1 && out[n-1] == '%' || n >= 2 && out[n-2] == '%' && isHex(out[n-1])
}

func normalizePattern(s string) string {
	body := strings.TrimSuffix(s, "$") // the anchor; an earlier '$' is an octet
	if isNormal(body, true) {
		return s
	}
	b := appendNormal(make([]byte, 0, len(s)+8), body, true)
	return string(append(b, s[len(body):]...))
}

// googleEscape is the escaping Google's parser applies to patterns (and not
// to paths): upper-case hex in escapes and %-encoded octets >= 0x80. Only
// the differential test's dialect uses it. With hexBug it reproduces a bug
// of the Go port (github.com/jimsmart/grobotstxt v1.0.3): when a pattern
// needs rewriting, its toUpper clears bit 5 of every escape's hex digits,
// so "%3c" becomes "%\x13C" and never matches.
func googleEscape(s string, hexBug bool) string {
	rewrite := false
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) &&
			('a' <= s[i+1] || 'a' <= s[i+2]) {
			rewrite = true
		}
	}
	if !rewrite {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			if hexBug {
				b = append(b, '%', s[i+1]&0xDF, s[i+2]&0xDF)
			} else {
				b = append(b, '%', upper(s[i+1]), upper(s[i+2]))
			}
			i += 2
		case c >= 0x80:
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
