package links

import "bytes"

// The extractor needs the start tags of a page and nothing else: their raw
// bytes (rawtag.go reads the attributes from them). A tokenizer returns
// every token and copies the page into its own buffer on the way, a byte
// at a time; it was half of the extractor's time. scanner finds the same
// start tags in place, jumping from '<' to '<' with bytes.IndexByte and
// reading only what decides where a token ends: tag attributes (a quoted
// value may hold '>'), comments, and the raw text of script, style,
// textarea, title and the like, where "<a" is text.
//
// It follows golang.org/x/net/html's tokenizer (token.go: Next,
// readStartTag, readTag, readTagAttrKey, readTagAttrVal, readComment,
// readMarkupDeclaration, readRawOrRCDATA, readRawEndTag, readScript)
// step for step, as seen through the extractor: the same start and
// self-closing tags with the same raw bytes, in the same order, and the
// end of input where that tokenizer returns its ErrorToken (a tag cut by
// the end of the body is not a token). TestScannerSameTags and
// FuzzScannerSameTags check this against upstream's tokenizer.

// scanner yields the start tags of a body that the extractor reads.
type scanner struct {
	s      []byte
	pos    int    // where the next token begins
	rawTag string // the element whose raw text comes next, as token.go's rawTag
	done   bool
	all    bool // yield every start tag, not only the extractor's (tests)
}

// next returns the next start or self-closing tag of an element in the
// extractor's table (elementName): its raw bytes and element, with its
// attributes of interest in t, or false at the end of the body. clean is
// false when t is incomplete because a value needs decoding (readAttrs).
// The contents of noscript and noframes are read as markup, as the
// extractor wants (token.go's NextIsNotRawText), and the tags themselves
// are not returned.
func (z *scanner) next(t *tag) (raw []byte, el string, clean, ok bool) {
	if z.done {
		return nil, "", false, false
	}
	s := z.s
	i := z.pos
	if z.rawTag != "" {
		i = z.skipRawText(i)
		z.rawTag = ""
	}
	for i < len(s) {
		lt := bytes.IndexByte(s[i:], '<')
		if lt < 0 {
			break
		}
		lt += i
		if lt+1 >= len(s) {
			break
		}
		c := s[lt+1]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			ne := nameEnd(s, lt+2)
			el, rawText := elementName(s[lt+1 : ne])
			want := el != ""
			if el == "noscript" || el == "noframes" {
				want, rawText = false, ""
			}
			var end int
			if want {
				t.reset()
				end, clean = tagAttrs(s, afterName(s, ne), t)
			} else {
				end, _ = tagAttrs(s, afterName(s, ne), nil)
			}
			if end < 0 {
				z.done = true // a tag cut by the end of the body
				return nil, "", false, false
			}
			i = end
			if want || z.all {
				z.pos, z.rawTag = i, rawText
				return s[lt:end], el, clean, true
			}
			if rawText != "" {
				z.rawTag = rawText
				i = z.skipRawText(i)
				z.rawTag = ""
			}
		case c == '/':
			i = endTagEnd(s, lt+2)
		case c == '!':
			i = markupEnd(s, lt+2)
		case c == '?':
			i = closeAngle(s, lt+1)
		default:
			i = lt + 1 // reconsume c
		}
	}
	z.done = true
	return nil, "", false, false
}

// endTagEnd returns where the token that begins "</" ends; i is after the
// "</". The body's length means the end of input.
func endTagEnd(s []byte, i int) int {
	if i >= len(s) {
		return len(s)
	}
	c := s[i]
	switch {
	case c == '>': // "</>" is an empty comment
		return i + 1
	case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		if e, _ := tagAttrs(s, afterName(s, nameEnd(s, i+1)), nil); e >= 0 {
			return e
		}
		return len(s)
	}
	return closeAngle(s, i) // a bogus comment
}

// closeAngle returns the index after the first '>' at or after i, or the
// body's length (readUntilCloseAngle).
func closeAngle(s []byte, i int) int {
	if e := bytes.IndexByte(s[i:], '>'); e >= 0 {
		return i + e + 1
	}
	return len(s)
}

// markupEnd returns where a token that begins "<!" ends; i is after the
// "<!" (readMarkupDeclaration). A doctype and a bogus comment both end at
// the first '>'; CDATA sections are bogus comments to a tokenizer that
// does not allow them, as the extractor's did not.
func markupEnd(s []byte, i int) int {
	if i+2 > len(s) {
		return len(s)
	}
	if s[i] == '-' && s[i+1] == '-' {
		return commentEnd(s, i+2)
	}
	return closeAngle(s, i)
}

// commentEnd returns the index after a comment whose "<!--" ends at i,
// or the body's length (readComment).
func commentEnd(s []byte, i int) int {
	dashes := 0
	beginning := true
	for i < len(s) {
		c := s[i]
		i++
		switch c {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return i
			}
		case '!':
			if dashes >= 2 {
				if i >= len(s) {
					return len(s)
				}
				c = s[i]
				i++
				if c == '>' {
					return i
				}
				if c == '-' {
					dashes = 1
					beginning = false
					continue
				}
			}
		}
		dashes = 0
		beginning = false
		// Until the next '-', '>' or '!' every byte would do just that.
		for i < len(s) && s[i] != '-' && s[i] != '>' && s[i] != '!' {
			i++
		}
	}
	return len(s)
}

// skipRawText returns where the raw text of z.rawTag that begins at i
// ends: at the "<" of its end tag, or the body's length.
func (z *scanner) skipRawText(i int) int {
	s := z.s
	switch z.rawTag {
	case "plaintext":
		return len(s)
	case "script":
		return scriptEnd(s, i)
	}
	for {
		lt := bytes.IndexByte(s[i:], '<')
		if lt < 0 {
			return len(s)
		}
		lt += i
		if lt+1 >= len(s) {
			return len(s)
		}
		if s[lt+1] != '/' {
			i = lt + 1
			continue
		}
		next, found, eof := rawEndTag(s, lt+2, z.rawTag)
		if found {
			return lt
		}
		if eof {
			return len(s)
		}
		i = next
	}
}

// rawEndTag matches the name and terminator of "</tag" at s[i:] (i is
// after the "</"), as readRawEndTag: found says it matched, else next is
// where scanning resumes (the mismatched byte is read again) and eof says
// the body ended first.
func rawEndTag(s []byte, i int, tag string) (next int, found, eof bool) {
	for k := 0; k < len(tag); k++ {
		if i >= len(s) {
			return len(s), false, true
		}
		if c := s[i]; c != tag[k] && c != tag[k]-('a'-'A') {
			return i, false, false
		}
		i++
	}
	if i >= len(s) {
		return len(s), false, true
	}
	switch s[i] {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		return i, true, false
	}
	return i, false, false
}

// scriptEnd returns where the text of a script that begins at i ends: at
// the "<" of its end tag, or the body's length. It is readScript's state
// machine, with its byzantine rules for "<!--" and "<script" inside a
// script; reading past the body's end ends the text there. readScript's
// three escaped states (no dash, one, two) are one here, with dashes
// counting the dashes just read up to two, and so are its three double
// escaped states.
func scriptEnd(s []byte, i int) int {
	n := len(s)
	var c byte
	var found, eof bool
	dashes := 0

scriptData:
	if k := bytes.IndexByte(s[i:], '<'); k >= 0 {
		i += k + 1
	} else {
		return n
	}
	// scriptDataLessThanSign
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '/':
		if i, found, eof = rawEndTag(s, i, "script"); found {
			return i - len("</script")
		} else if eof {
			return n
		}
		goto scriptData
	case '!':
		// scriptDataEscapeStart and scriptDataEscapeStartDash: "<!--".
		if i+1 >= n {
			if i < n && s[i] != '-' {
				goto scriptData
			}
			return n
		}
		if s[i] != '-' || s[i+1] != '-' {
			goto scriptData // the byte that is not '-' is read again
		}
		i += 2
		dashes = 2
		goto scriptDataEscaped
	}
	i--
	goto scriptData

scriptDataEscaped:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		dashes = min(dashes+1, 2)
		goto scriptDataEscaped
	case '<':
		goto scriptDataEscapedLessThanSign
	case '>':
		if dashes == 2 {
			goto scriptData
		}
	}
	dashes = 0
	goto scriptDataEscaped

scriptDataEscapedLessThanSign:
	dashes = 0
	if i >= n {
		return n
	}
	c = s[i]
	i++
	if c == '/' {
		if i, found, eof = rawEndTag(s, i, "script"); found {
			return i - len("</script")
		} else if eof {
			return n
		}
		goto scriptDataEscaped
	}
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
		// scriptDataDoubleEscapeStart: "<script" and a terminator.
		i--
		for k := 0; k < len("script"); k++ {
			if i >= n {
				return n
			}
			if c = s[i]; c != "script"[k] && c != "SCRIPT"[k] {
				goto scriptDataEscaped // c is read again
			}
			i++
		}
		if i >= n {
			return n
		}
		switch s[i] {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			i++
			goto scriptDataDoubleEscaped
		}
		goto scriptDataEscaped
	}
	i--
	goto scriptData

scriptDataDoubleEscaped:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		dashes = min(dashes+1, 2)
		goto scriptDataDoubleEscaped
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	case '>':
		if dashes == 2 {
			dashes = 0
			goto scriptData
		}
	}
	dashes = 0
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedLessThanSign:
	dashes = 0
	if i >= n {
		return n
	}
	if s[i] != '/' {
		goto scriptDataDoubleEscaped // read again
	}
	// scriptDataDoubleEscapeEnd: a "</script>" here ends the double
	// escape, not the script.
	if i, found, eof = rawEndTag(s, i+1, "script"); found {
		i++ // after the terminator, where readScript goes on
		goto scriptDataEscaped
	} else if eof {
		return n
	}
	goto scriptDataDoubleEscaped
}
