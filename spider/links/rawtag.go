package links

import "bytes"

// The tokenizer's TagAttr copies every key and value it returns (twice,
// for NUL replacement), which made reading attributes a third of the
// extractor's allocations. readRaw reads them from the raw tag instead,
// splitting it exactly as the tokenizer does (readTag, readTagAttrKey and
// readTagAttrVal of golang.org/x/net/html), and leaves to TagAttr only the
// tags whose interesting values need its decoding: character references
// ("&amp;"), NUL and CR.

func isTagSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

// readRaw fills t from a raw start tag ("<a href=x>"). It returns false,
// with t in an unspecified state, when a value needs decoding; the caller
// then reads the tag with readAttrs.
func (t *tag) readRaw(raw []byte) bool {
	*t = tag{}
	i := 1 // after "<"
	for i < len(raw) && !isTagSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	i = skipTagSpace(raw, i)
	for i < len(raw) && raw[i] != '>' {
		// attribute name
		ks := i
		for ; i < len(raw); i++ {
			c := raw[i]
			if c == '=' && i == ks {
				continue // "=" first is part of the name
			}
			if c == '=' || isTagSpace(c) || c == '/' || c == '>' {
				break
			}
		}
		key := raw[ks:i]
		// attribute value
		var val []byte
		i = skipTagSpace(raw, i)
		switch {
		case i >= len(raw):
		case raw[i] == '/':
			i++
		case raw[i] != '=':
		default:
			i = skipTagSpace(raw, i+1)
			if i >= len(raw) {
				break
			}
			switch q := raw[i]; q {
			case '>':
			case '\'', '"':
				vs := i + 1
				e := bytes.IndexByte(raw[vs:], q)
				if e < 0 {
					val, i = raw[vs:], len(raw)
				} else {
					val, i = raw[vs:vs+e], vs+e+1
				}
			default:
				vs := i
				for i < len(raw) && !isTagSpace(raw[i]) && raw[i] != '>' {
					i++
				}
				val = raw[vs:i]
				if i < len(raw) && raw[i] != '>' {
					i++ // the space that ended the value
				}
			}
		}
		if len(key) > 0 && !t.set(key, val) {
			return false
		}
		i = skipTagSpace(raw, i)
	}
	return true
}

func skipTagSpace(s []byte, i int) int {
	for i < len(s) && isTagSpace(s[i]) {
		i++
	}
	return i
}

// set records one attribute if it is of interest and the first of its
// name. It returns false if the value needs the tokenizer's decoding.
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
	if bytes.IndexByte(val, '&') >= 0 || bytes.IndexByte(val, 0) >= 0 || bytes.IndexByte(val, '\r') >= 0 {
		return false
	}
	t.seen |= bit
	*dst = val
	return true
}
