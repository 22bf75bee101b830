package robots

import (
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Rules are the compiled rules of one robots.txt for one crawler: the
// patterns of the groups that apply to it, in priority order, so the first
// pattern that matches decides. A Rules is immutable and safe for concurrent
// use.
type Rules struct {
	patterns []pattern
	// CrawlDelay is the first valid Crawl-delay of the applicable groups, 0
	// when there is none. RFC 9309 does not define it; a node may honour it.
	CrawlDelay time.Duration
	// HasCrawlDelay tells a Crawl-delay of 0 from none.
	HasCrawlDelay bool
	d             dialect
}

// pattern is one compiled rule. prefix is the literal text before the first
// '*' (or the whole pattern without a final '$'), which is compared first.
type pattern struct {
	text   string // the normalised pattern, without a final '$'
	prefix string
	wild   bool // text holds a '*'
	anchor bool // the pattern ended in '$': the match must reach the end
	allow  bool
	prio   int // length of the pattern as written (normalised), '$' included
}

// AllowAll allows everything: what a 4xx robots.txt means.
var allowAll = &Rules{}

// disallowAll disallows everything but /robots.txt: what an unreachable
// robots.txt means.
var disallowAll = &Rules{patterns: []pattern{{text: "/", prefix: "/", prio: 1}}}

// AllowAll returns rules that allow every path.
func AllowAll() *Rules { return allowAll }

// DisallowAll returns rules that disallow every path but /robots.txt.
func DisallowAll() *Rules { return disallowAll }

// Rules compiles the rules that apply to the crawler whose user agent (or
// product token) is agent: the merged groups naming its product token, or
// else the merged "*" groups, or else none (everything allowed).
func (f *File) Rules(agent string) *Rules {
	token := strings.ToLower(ProductToken(agent))
	r := &Rules{d: f.d}
	for pass := 0; pass < 2 && len(r.patterns) == 0; pass++ {
		want := token
		if pass == 1 {
			want = "*"
		}
		found := false
		for gi := range f.groups {
			g := &f.groups[gi]
			if !slices.Contains(g.agents, want) || want == "" {
				continue
			}
			found = true
			for _, ru := range g.rules {
				if p, ok := compile(ru); ok {
					r.patterns = append(r.patterns, p)
				}
			}
			if g.crawlDelay >= 0 && !r.HasCrawlDelay {
				r.CrawlDelay, r.HasCrawlDelay = g.crawlDelay, true
			}
		}
		if found {
			break // a specific group, even an empty one, excludes "*"
		}
	}
	sortPatterns(r.patterns)
	r.patterns = slices.CompactFunc(r.patterns, func(a, b pattern) bool {
		return a.text == b.text && a.anchor == b.anchor && a.allow == b.allow
	})
	return r
}

func compile(ru rule) (pattern, bool) {
	if ru.pattern == "" {
		return pattern{}, false // "Disallow:" alone says nothing (priority 0)
	}
	p := pattern{text: ru.pattern, allow: ru.allow, prio: len(ru.pattern)}
	if strings.HasSuffix(p.text, "$") {
		p.text, p.anchor = p.text[:len(p.text)-1], true
	}
	p.prefix = p.text
	if i := strings.IndexByte(p.text, '*'); i >= 0 {
		p.prefix, p.wild = p.text[:i], true
	}
	return p, true
}

// sortPatterns puts patterns in decision order: longest first, Allow before
// Disallow at equal length, then by text so equal rule sets compile equal.
func sortPatterns(ps []pattern) {
	slices.SortFunc(ps, func(a, b pattern) int {
		if a.prio != b.prio {
			return b.prio - a.prio
		}
		if a.allow != b.allow {
			if a.allow {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.text, b.text); c != 0 {
			return c
		}
		if a.anchor != b.anchor {
			if a.anchor {
				return -1
			}
			return 1
		}
		return 0
	})
}

// maxStackPath is the longest path a check normalises without allocating.
const maxStackPath = 512

// Allowed reports whether the rules allow a URL's path+query (starting with
// '/', without the fragment). It allocates nothing for paths already in
// normal form or shorter than 512 octets.
func (r *Rules) Allowed(path string) bool {
	if path == "" {
		path = "/"
	}
	if path == "/robots.txt" && !r.d.noRobotsTx {
		return true
	}
	if len(r.patterns) == 0 {
		return true
	}
	if !r.d.rawPercent && !isNormal(path) {
		var buf [maxStackPath]byte
		b := appendNormal(buf[:0], path)
		// decide does not keep the string, so it may alias the stack buffer.
		return r.decide(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	return r.decide(path)
}

func (r *Rules) decide(path string) bool {
	for i := range r.patterns {
		if r.patterns[i].match(path) {
			return r.patterns[i].allow
		}
	}
	return true
}

// AllowedURL is Allowed for an absolute URL; a URL without a path checks "/".
func (r *Rules) AllowedURL(rawURL string) bool { return r.Allowed(PathOf(rawURL)) }

// Len returns the number of compiled patterns.
func (r *Rules) Len() int { return len(r.patterns) }

// match reports whether p matches path. Without wildcards that is a prefix
// (or, anchored, an equality) test; with them the segments between '*' are
// found left to right, which is exact for '*'-only globs: taking each segment
// at its leftmost place leaves the most room for the rest.
func (p *pattern) match(path string) bool {
	if !strings.HasPrefix(path, p.prefix) {
		return false
	}
	if !p.wild {
		return !p.anchor || len(path) == len(p.prefix)
	}
	s := path[len(p.prefix):]
	rest := p.text[len(p.prefix)+1:]
	for {
		i := strings.IndexByte(rest, '*')
		if i < 0 {
			if p.anchor {
				return strings.HasSuffix(s, rest)
			}
			return strings.Contains(s, rest)
		}
		seg := rest[:i]
		rest = rest[i+1:]
		if seg == "" {
			continue
		}
		j := strings.Index(s, seg)
		if j < 0 {
			return false
		}
		s = s[j+len(seg):]
	}
}

// PathOf returns the path+query of an absolute URL ("scheme://authority/p?q#f"
// gives "/p?q"), "/" when there is none. It does not validate the URL.
func PathOf(rawURL string) string {
	s := rawURL
	if i := strings.Index(s, "://"); i >= 0 && !strings.ContainsAny(s[:i], "/?#") {
		s = s[i+3:]
		j := strings.IndexAny(s, "/?#")
		if j < 0 {
			return "/"
		}
		s = s[j:]
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "/"
	}
	if s[0] != '/' {
		// "http://h?q" has the empty path: the request line is "/?q".
		return "/" + s
	}
	return s
}

// OriginOf returns "scheme://authority" of an absolute URL, the key robots.txt
// rules are cached under, or "" when rawURL has no "://".
func OriginOf(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 || strings.ContainsAny(rawURL[:i], "/?#") {
		return ""
	}
	j := strings.IndexAny(rawURL[i+3:], "/?#")
	if j < 0 {
		return rawURL
	}
	return rawURL[:i+3+j]
}
