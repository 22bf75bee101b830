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

// scanner yields the start tags of a body.
type scanner struct {
	s      []byte
	pos    int    // where the next token begins
	rawTag string // the element whose raw text comes next, as token.go's rawTag
	done   bool
}

// rawTextElements are the elements after whose start tag the tokenizer
// reads raw text (or RCDATA) up to the matching end tag.
var rawTextElements = [...]string{"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp"}

// notRawText is token.go's NextIsNotRawText: the current start tag's
// contents are markup (the extractor reads noscript and noframes so).
func (z *scanner) notRawText() { z.rawTag = "" }

// next returns the raw bytes of the next start or self-closing tag, or
// false at the end of the body.
func (z *scanner) next() ([]byte, bool) {
	if z.done {
		return nil, false
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
			end := tagEnd(s, lt+2)
			if end < 0 {
				break
			}
			z.pos = end
			z.rawTag = rawTextOf(s[lt+1:])
			return s[lt:end], true
		case c == '/':
			i = endTagEnd(s, lt+2)
			continue
		case c == '!':
			i = markupEnd(s, lt+2)
			continue
		case c == '?':
			i = closeAngle(s, lt+1)
			continue
		default:
			i = lt + 1 // reconsume c
			continue
		}
		break // a tag cut by the end of the body
	}
	z.done = true
	return nil, false
}

// rawTextOf returns the element of a tag (s starts at its name) whose
// contents the tokenizer reads as raw text, or "".
func rawTextOf(s []byte) string {
	n := 0
	for n < len(s) && !isTagSpace(s[n]) && s[n] != '/' && s[n] != '>' {
		n++
	}
	if n < len("xmp") || n > len("plaintext") {
		return ""
	}
	for _, e := range rawTextElements {
		if len(e) == n && equalFoldLower(s[:n], e) {
			return e
		}
	}
	return ""
}

// equalFoldLower reports whether b, with ASCII letters folded, is the
// lower-case lower.
func equalFoldLower(b []byte, lower string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// tagEnd returns the index after the '>' that ends a start or end tag
// whose name began at s[i-1], or -1 if the body ends first (readTag).
func tagEnd(s []byte, i int) int {
	// The name (readTagName): up to white space, which it consumes, or
	// '/' or '>', which it does not.
	for ; i < len(s); i++ {
		c := s[i]
		if isTagSpace(c) {
			i++
			break
		}
		if c == '/' || c == '>' {
			break
		}
	}
	for {
		i = skipTagSpace(s, i)
		if i >= len(s) {
			return -1
		}
		if s[i] == '>' {
			return i + 1
		}
		// The key (readTagAttrKey): '=' first is part of it.
		ks := i
		for ; i < len(s); i++ {
			c := s[i]
			if c == '=' && i == ks {
				continue
			}
			if c == '=' || isTagSpace(c) || c == '/' || c == '>' {
				break
			}
		}
		// The value (readTagAttrVal).
		i = skipTagSpace(s, i)
		if i >= len(s) {
			return -1
		}
		switch s[i] {
		case '/':
			i++
			continue
		case '=':
		default:
			continue
		}
		i = skipTagSpace(s, i+1)
		if i >= len(s) {
			return -1
		}
		switch q := s[i]; q {
		case '>':
		case '\'', '"':
			e := bytes.IndexByte(s[i+1:], q)
			if e < 0 {
				return -1
			}
			i += 1 + e + 1
		default:
			for i++; i < len(s); i++ {
				c := s[i]
				if isTagSpace(c) {
					i++
					break
				}
				if c == '>' {
					break
				}
			}
		}
	}
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
		if e := tagEnd(s, i+1); e >= 0 {
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
// script; reading past the body's end ends the text there.
func scriptEnd(s []byte, i int) int {
	n := len(s)
	var c byte
	var found, eof bool

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
		goto scriptDataEscapeStart
	}
	i--
	goto scriptData

scriptDataEscapeStart:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	if c != '-' {
		i--
		goto scriptData
	}
	// scriptDataEscapeStartDash
	if i >= n {
		return n
	}
	c = s[i]
	i++
	if c == '-' {
		goto scriptDataEscapedDashDash
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
		goto scriptDataEscapedDash
	case '<':
		goto scriptDataEscapedLessThanSign
	}
	goto scriptDataEscaped

scriptDataEscapedDash:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		goto scriptDataEscapedDashDash
	case '<':
		goto scriptDataEscapedLessThanSign
	}
	goto scriptDataEscaped

scriptDataEscapedDashDash:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		goto scriptDataEscapedDashDash
	case '<':
		goto scriptDataEscapedLessThanSign
	case '>':
		goto scriptData
	}
	goto scriptDataEscaped

scriptDataEscapedLessThanSign:
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
			c = s[i]
			i++
			if c != "script"[k] && c != "SCRIPT"[k] {
				i--
				goto scriptDataEscaped
			}
		}
		if i >= n {
			return n
		}
		c = s[i]
		i++
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			goto scriptDataDoubleEscaped
		}
		i--
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
		goto scriptDataDoubleEscapedDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedDash:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		goto scriptDataDoubleEscapedDashDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedDashDash:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	switch c {
	case '-':
		goto scriptDataDoubleEscapedDashDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	case '>':
		goto scriptData
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedLessThanSign:
	if i >= n {
		return n
	}
	c = s[i]
	i++
	if c != '/' {
		i--
		goto scriptDataDoubleEscaped
	}
	// scriptDataDoubleEscapeEnd: a "</script>" here ends the double
	// escape, not the script.
	if i, found, eof = rawEndTag(s, i, "script"); found {
		i += 1 // after the terminator, where readScript goes on
		goto scriptDataEscaped
	} else if eof {
		return n
	}
	goto scriptDataDoubleEscaped
}
