package urlnorm

import "unicode/utf8"

// encodeSet is one of the standard's percent-encode sets (§1.3), as a
// bitmap of the ASCII bytes it holds. Every set holds all code points
// above U+007E, so bytes >= 0x7F are always encoded.
type encodeSet [2]uint64

func (s *encodeSet) has(c byte) bool {
	if c >= 0x7f {
		return true
	}
	return s[c>>6]&(1<<(c&63)) != 0
}

// hasASCII is has without the rule for bytes >= 0x7F, for sets that are
// not percent-encode sets; c must be < 0x80.
func (s *encodeSet) hasASCII(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func newEncodeSet(base encodeSet, extra string) encodeSet {
	for i := 0; i < len(extra); i++ {
		c := extra[i]
		base[c>>6] |= 1 << (c & 63)
	}
	return base
}

// The sets, as the standard defines them at the revision the conformance
// data (web-platform-tests 04f8022e) tests: the path set does not hold "^"
// yet, the userinfo set does.
var (
	c0ControlSet    = encodeSet{0xffffffff, 0}
	fragmentSet     = newEncodeSet(c0ControlSet, " \"<>`")
	querySet        = newEncodeSet(c0ControlSet, " \"#<>")
	specialQuerySet = newEncodeSet(querySet, "'")
	pathSet         = newEncodeSet(querySet, "?`{}")
	userinfoSet     = newEncodeSet(pathSet, "/:;=@[\\]^|")
)

const upperHex = "0123456789ABCDEF"

// appendEncoded appends s percent-encoded with set. Bytes that are not
// valid UTF-8 are read as U+FFFD, as decoding the input would have made
// them, so the result is always valid UTF-8 percent-encoded.
func appendEncoded(dst []byte, s string, set *encodeSet) []byte {
	for i := 0; i < len(s); {
		// Most bytes need no encoding: copy them in runs.
		j := i
		for j < len(s) && !set.has(s[j]) {
			j++
		}
		dst = append(dst, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if set.has(c) {
				dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "%EF%BF%BD"...)
			i++
			continue
		}
		for _, b := range []byte(s[i : i+n]) {
			dst = append(dst, '%', upperHex[b>>4], upperHex[b&15])
		}
		i += n
	}
	return dst
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentDecode appends the percent-decoding of s (§1.3): "%" followed by
// two hex digits is one byte, any other "%" stays as it is.
func percentDecode(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				dst = append(dst, hi<<4|lo)
				i += 2
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}
