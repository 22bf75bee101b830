package links

import (
	"bytes"
	"unicode/utf8"
)

// Attribute values with character references ("a?x=1&amp;y=2") are a few
// in a hundred links on real pages, and decoding them through the
// tokenizer's TagAttr cost a tokenizer per tag: a tenth of the
// extractor's time and most of its allocations. appendUnescaped decodes
// the references that real pages use, exactly as golang.org/x/net/html's
// unescape(b, true) (escape.go: unescapeEntity in attribute mode), and
// leaves every other case to the tokenizer.

// appendUnescaped appends val with its character references decoded to
// dst. ok is false, with dst unspecified, when val holds a reference it
// does not decode: a named one other than the five below with its ';', or
// a numeric one in 0x80-0x9F (upstream maps those through Windows-1252).
func appendUnescaped(dst, val []byte) (out []byte, ok bool) {
	for i := 0; i < len(val); {
		amp := bytes.IndexByte(val[i:], '&')
		if amp < 0 {
			return append(dst, val[i:]...), true
		}
		dst = append(dst, val[i:i+amp]...)
		i += amp
		s := val[i:]
		if len(s) < 2 {
			return append(dst, '&'), true
		}
		switch c := s[1]; {
		case c == '#':
			r, n, ok := numericRef(s)
			if !ok {
				return dst, false
			}
			if n == 1 {
				dst = append(dst, '&')
			} else {
				dst = utf8.AppendRune(dst, r)
			}
			i += n
		case isAlnum(c):
			j := 2
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			if j >= len(s) || s[j] != ';' {
				return dst, false // a legacy reference without ';', or not one
			}
			var r rune
			switch string(s[1:j]) {
			case "amp":
				r = '&'
			case "lt":
				r = '<'
			case "gt":
				r = '>'
			case "quot":
				r = '"'
			case "apos":
				r = '\''
			default:
				return dst, false
			}
			dst = append(dst, byte(r))
			i += j + 1
		default: // "&" alone, "&;", "& "
			dst = append(dst, '&')
			i++
		}
	}
	return dst, true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// numericRef reads "&#NN;" or "&#xHH;" at the start of s (s[:2] is "&#")
// as unescapeEntity does: the rune and the bytes it takes, n = 1 if s is
// not a reference (the '&' stands for itself), ok false for 0x80-0x9F.
func numericRef(s []byte) (r rune, n int, ok bool) {
	if len(s) <= 2 {
		return '&', 1, true
	}
	i := 2
	hex := false
	if s[i] == 'x' || s[i] == 'X' {
		hex = true
		i++
	}
	i0 := i
	x := rune(0)
	for ; i < len(s); i++ {
		c := s[i]
		var d rune
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case hex && 'a' <= c && c <= 'f':
			d = rune(c-'a') + 10
		case hex && 'A' <= c && c <= 'F':
			d = rune(c-'A') + 10
		default:
			goto done
		}
		if x <= 0x10FFFF {
			if hex {
				x = 16*x + d
			} else {
				x = 10*x + d
			}
		}
	}
done:
	if i == i0 {
		return '&', 1, true
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	switch {
	case 0x80 <= x && x <= 0x9F:
		return 0, 0, false
	case x == 0 || 0xD800 <= x && x <= 0xDFFF || x > 0x10FFFF:
		x = utf8.RuneError
	}
	return x, i, true
}
