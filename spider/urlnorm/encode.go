package urlnorm

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

// appendEncoded appends s percent-encoded with set. A byte that is not
// valid UTF-8 is encoded as it is: it comes from a page in a legacy charset
// (TIS-620, windows-1252) read undecoded, and as U+FFFD ("%EF%BF%BD") every
// such byte was one, so the links /ก.html and /ข.html of a TIS-620 page
// gave one URL that names neither. For a query "%A1" is what a browser
// sends from such a page; for a path it sends the UTF-8 of the decoded
// character, which would take the page's charset.
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
		// Every set holds the bytes >= 0x7F: a UTF-8 sequence is encoded
		// byte by byte, and so is a byte that is not UTF-8.
		c := s[i]
		dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		i++
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
