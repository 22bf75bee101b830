package links

import "bytes"

// The tokenizer's TagAttr copies every key and value it returns (twice,
// for NUL replacement), which made reading attributes a third of the
// extractor's allocations. readRaw reads them from the raw tag instead,
// splitting it exactly as the tokenizer does (readTag, readTagAttrKey and
// readTagAttrVal of golang.org/x/net/html), and leaves to TagAttr only the
// tags whose interesting values need its decoding: character references
// ("&amp;") other than the common ones (unescape.go), NUL and CR.

func isTagSpace(c byte) bool { return tagClass[c] == classSpace }

// Byte classes of the tag grammar, in a table: the loops over names and
// keys are the scanner's inner loops.
const (
	classSpace = 1 << iota // ' ', '\n', '\r', '\t', '\f'
	classSlash
	classGT
	classEq
)

var tagClass = [256]uint8{
	' ': classSpace, '\n': classSpace, '\r': classSpace, '\t': classSpace, '\f': classSpace,
	'/': classSlash, '>': classGT, '=': classEq,
}

// nameEnd returns the index of the byte that ends a tag name beginning at
// s[i] (white space, '/' or '>'), or len(s) (readTagName).
func nameEnd(s []byte, i int) int {
	for i < len(s) && tagClass[s[i]]&(classSpace|classSlash|classGT) == 0 {
		i++
	}
	return i
}

// afterName is where a tag's attributes begin when its name ends at
// s[i]: readTagName consumes one white space byte, not '/' or '>'.
func afterName(s []byte, i int) int {
	if i < len(s) && tagClass[s[i]] == classSpace {
		i++
	}
	return i
}

// readRaw fills t from a raw start tag ("<a href=x>"). It returns false,
// with t in an unspecified state, when a value needs decoding; the caller
// then reads the tag with readAttrs.
func (t *tag) readRaw(raw []byte) bool {
	t.reset()
	_, clean := tagAttrs(raw, afterName(raw, nameEnd(raw, 1)), t)
	return clean
}

// tagAttrs reads the attributes of a tag from s[i] (after its name) to
// the '>' that ends it, as readTag, readTagAttrKey and readTagAttrVal do,
// and returns the index after that '>', or -1 if s ends first. With t
// non-nil it records the attributes of interest in t; clean is false if
// one of them needs decoding (t is then incomplete).
func tagAttrs(s []byte, i int, t *tag) (end int, clean bool) {
	clean = true
	for {
		i = skipTagSpace(s, i)
		if i >= len(s) {
			return -1, clean
		}
		if s[i] == '>' {
			return i + 1, clean
		}
		// The key: '=' first is part of it.
		ks := i
		if s[i] == '=' {
			i++
		}
		for i < len(s) && tagClass[s[i]] == 0 {
			i++
		}
		key := s[ks:i]
		// The value.
		var val []byte
		i = skipTagSpace(s, i)
		if i >= len(s) {
			return -1, clean
		}
		switch s[i] {
		case '/':
			i++
		case '=':
			i = skipTagSpace(s, i+1)
			if i >= len(s) {
				return -1, clean
			}
			switch q := s[i]; q {
			case '>':
			case '\'', '"':
				e := bytes.IndexByte(s[i+1:], q)
				if e < 0 {
					return -1, clean
				}
				val = s[i+1 : i+1+e]
				i += 1 + e + 1
			default:
				vs := i
				i++
				for i < len(s) && tagClass[s[i]]&(classSpace|classGT) == 0 {
					i++
				}
				val = s[vs:i]
				if i < len(s) && s[i] != '>' {
					i++ // the white space that ended the value
				}
			}
		}
		if t != nil && clean && len(key) > 0 {
			clean = t.set(key, val)
		}
	}
}

func skipTagSpace(s []byte, i int) int {
	for i < len(s) && tagClass[s[i]] == classSpace {
		i++
	}
	return i
}

// set records one attribute if it is of interest and the first of its
// name, decoding its character references into t.dec (unescape.go). It
// returns false if the value needs the tokenizer's decoding.
func (t *tag) set(key, val []byte) bool {
	if len(key) > len("http-equiv") {
		return true
	}
	var lower [10]byte
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	bit, dst := t.slot(string(lower[:len(key)]))
	if dst == nil || t.seen&bit != 0 {
		return true
	}
	if bytes.IndexByte(val, 0) >= 0 || bytes.IndexByte(val, '\r') >= 0 {
		return false
	}
	if bytes.IndexByte(val, '&') >= 0 {
		start := len(t.dec)
		var ok bool
		if t.dec, ok = appendUnescaped(t.dec, val); !ok {
			t.dec = t.dec[:start]
			return false
		}
		// Later values are appended after this one: if t.dec moves,
		// val keeps the old array.
		val = t.dec[start:]
	}
	t.seen |= bit
	*dst = val
	return true
}
