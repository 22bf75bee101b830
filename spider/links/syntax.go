package links

import (
	"bytes"
	"strings"
)

// This file reads the small syntaxes links hide in: srcset, meta refresh,
// the Link header, rel and robots directives. Each follows its
// specification's parsing steps, which never fail: garbage yields nothing.

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func skipSpace(s []byte, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// forEachSrcsetURL calls fn with the URL of each image candidate of a
// srcset attribute (HTML "parse a srcset attribute").
func forEachSrcsetURL(s []byte, fn func([]byte)) {
	i := 0
	for {
		for i < len(s) && (isSpace(s[i]) || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return
		}
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		u := s[start:i]
		if bytes.HasSuffix(u, []byte(",")) {
			u = bytes.TrimRight(u, ",")
		} else {
			// Skip the descriptors up to the comma that ends this
			// candidate; a comma inside parentheses does not.
			inParens := false
			for ; i < len(s); i++ {
				c := s[i]
				if inParens {
					if c == ')' {
						inParens = false
					}
					continue
				}
				if c == '(' {
					inParens = true
				} else if c == ',' {
					i++
					break
				}
			}
		}
		if len(u) > 0 {
			fn(u)
		}
	}
}

// refreshURL returns the URL of a refresh value ("5; url='/next'"), as the
// HTML "shared declarative refresh steps" read it. ok is false when the
// value has no URL (a plain reload) or is malformed.
func refreshURL(s []byte) (u []byte, ok bool) {
	i := skipSpace(s, 0)
	digits := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == digits && (i >= len(s) || s[i] != '.') {
		return nil, false
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i >= len(s) {
		return nil, false
	}
	if s[i] != ';' && s[i] != ',' && !isSpace(s[i]) {
		return nil, false
	}
	i = skipSpace(s, i)
	if i < len(s) && (s[i] == ';' || s[i] == ',') {
		i++
	}
	i = skipSpace(s, i)
	if i >= len(s) {
		return nil, false
	}
	rest := s[i:]
	j := i
	if lower(s, j) == 'u' {
		if lower(s, j+1) != 'r' || lower(s, j+2) != 'l' {
			return trimURL(rest)
		}
		j = skipSpace(s, j+3)
		if j >= len(s) || s[j] != '=' {
			return trimURL(rest)
		}
		j = skipSpace(s, j+1)
	}
	if j < len(s) && (s[j] == '\'' || s[j] == '"') {
		q := s[j]
		v := s[j+1:]
		if k := bytes.IndexByte(v, q); k >= 0 {
			v = v[:k]
		}
		return trimURL(v)
	}
	return trimURL(s[j:])
}

func lower(s []byte, i int) byte {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	return c
}

func trimURL(u []byte) ([]byte, bool) {
	u = bytes.TrimSpace(u)
	return u, len(u) > 0
}

// forEachLinkHeader calls fn with the target and rel of each link-value of
// an HTTP Link header (RFC 8288: `<uri>; rel="a b"; x=y, <uri2>`).
func forEachLinkHeader(v string, fn func(u []byte, rel string)) {
	s := []byte(v)
	i := 0
	for i < len(s) {
		lt := bytes.IndexByte(s[i:], '<')
		if lt < 0 {
			return
		}
		i += lt + 1
		gt := bytes.IndexByte(s[i:], '>')
		if gt < 0 {
			return
		}
		u := s[i : i+gt]
		i += gt + 1
		rel := ""
		// Parameters up to the comma that ends this link-value; commas
		// inside quoted strings do not.
		for i < len(s) && s[i] != ',' {
			i = skipSpace(s, i)
			if i >= len(s) || s[i] != ';' {
				// Garbage: skip to the next link-value.
				for i < len(s) && s[i] != ',' {
					if s[i] == '"' {
						i = skipQuoted(s, i)
					} else {
						i++
					}
				}
				break
			}
			i = skipSpace(s, i+1)
			ns := i
			for i < len(s) && s[i] != '=' && s[i] != ';' && s[i] != ',' && !isSpace(s[i]) {
				i++
			}
			name := s[ns:i]
			i = skipSpace(s, i)
			var val []byte
			if i < len(s) && s[i] == '=' {
				i = skipSpace(s, i+1)
				if i < len(s) && s[i] == '"' {
					end := skipQuoted(s, i)
					val = unquote(s[i:end])
					i = end
				} else {
					vs := i
					for i < len(s) && s[i] != ';' && s[i] != ',' {
						i++
					}
					val = bytes.TrimSpace(s[vs:i])
				}
			}
			if rel == "" && bytes.EqualFold(name, []byte("rel")) {
				rel = relString(val)
			}
			i = skipSpace(s, i)
		}
		fn(u, rel)
	}
}

// skipQuoted returns the index after the quoted string starting at s[i].
func skipQuoted(s []byte, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

func unquote(q []byte) []byte {
	q = q[1:]
	if len(q) > 0 && q[len(q)-1] == '"' {
		q = q[:len(q)-1]
	}
	if bytes.IndexByte(q, '\\') < 0 {
		return q
	}
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); i++ {
		if q[i] == '\\' && i+1 < len(q) {
			i++
		}
		out = append(out, q[i])
	}
	return out
}

// relString returns a rel value in lower case with single spaces between
// its tokens. The common values are constants, so they do not allocate.
func relString(rel []byte) string {
	rel = bytes.TrimSpace(rel)
	if len(rel) == 0 {
		return ""
	}
	for _, c := range commonRels {
		if bytes.EqualFold(rel, []byte(c)) {
			return c
		}
	}
	f := strings.Fields(strings.ToLower(string(rel)))
	return strings.Join(f, " ")
}

var commonRels = [...]string{
	"nofollow", "stylesheet", "canonical", "alternate", "icon", "shortcut icon",
	"next", "prev", "noopener", "noreferrer", "noopener noreferrer", "preload",
	"preconnect", "dns-prefetch", "manifest", "apple-touch-icon", "home", "up",
	"start", "index", "author", "license", "help", "search", "bookmark", "tag",
	"external", "sponsored", "ugc", "nofollow noopener", "noopener nofollow",
	"nofollow noopener noreferrer", "noopener noreferrer nofollow",
}

// hasToken reports whether the space-separated list holds tok.
func hasToken(list, tok string) bool {
	for list != "" {
		var f string
		f, list, _ = strings.Cut(list, " ")
		if f == tok {
			return true
		}
	}
	return false
}

// robotsName reports whether <meta name=...> addresses this crawler.
func robotsName(name []byte, agent string) bool {
	name = bytes.TrimSpace(name)
	return bytes.EqualFold(name, []byte("robots")) || agent != "" && bytes.EqualFold(name, []byte(agent))
}

// applyDirectives reads a comma-separated robots directive list.
func applyDirectives(s []byte, res *Result) {
	for len(s) > 0 {
		var d []byte
		if k := bytes.IndexByte(s, ','); k >= 0 {
			d, s = s[:k], s[k+1:]
		} else {
			d, s = s, nil
		}
		d = bytes.TrimSpace(d)
		switch {
		case bytes.EqualFold(d, []byte("nofollow")):
			res.NoFollow = true
		case bytes.EqualFold(d, []byte("noindex")):
			res.NoIndex = true
		case bytes.EqualFold(d, []byte("none")):
			res.NoFollow, res.NoIndex = true, true
		}
	}
}

// xRobotsTag applies one X-Robots-Tag value: "noindex, nofollow" for every
// crawler, "agent: noindex" for one. A colon also appears in directives
// with a value (unavailable_after: date), which address every crawler.
func xRobotsTag(v string, agent string, res *Result) {
	s := []byte(v)
	if k := bytes.IndexByte(s, ':'); k >= 0 {
		name := bytes.TrimSpace(s[:k])
		if !bytes.ContainsAny(name, ", ") && !isValuedDirective(name) {
			if agent == "" || !bytes.EqualFold(name, []byte(agent)) {
				return
			}
			s = s[k+1:]
		}
	}
	applyDirectives(s, res)
}

func isValuedDirective(name []byte) bool {
	for _, d := range [...]string{"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"} {
		if bytes.EqualFold(name, []byte(d)) {
			return true
		}
	}
	return false
}
