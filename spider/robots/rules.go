package robots

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// Rules are the compiled rules of one robots.txt for one crawler: the
// patterns of the groups that apply to it, in decision order (longest
// first, Allow first at equal length), so the first pattern that matches
// decides. Patterns whose literal prefix has a second byte (after the
// leading '/') are grouped by that byte, so a check only tries the group of
// the path's second byte plus the few patterns that start with a wildcard
// or are just "/". A Rules is immutable and safe for concurrent use.
type Rules struct {
	general []pattern     // literal prefix shorter than 2 bytes: tried for every path
	keyed   []pattern     // the others, grouped by prefix[1], each group in decision order
	keys    string        // the distinct prefix[1] bytes, one per group, in keyed's order
	starts  []uint32      // group i is keyed[starts[i]:starts[i+1]]
	lit     *literalIndex // the wildcard-free patterns, when there are many
	fp      [16]byte      // equal for rule sets that decide alike (see fingerprint)

	// CrawlDelay is the first valid Crawl-delay of the applicable groups, 0
	// when there is none. RFC 9309 does not define it; a node may honour it.
	CrawlDelay time.Duration
	// HasCrawlDelay tells a Crawl-delay of 0 from none.
	HasCrawlDelay bool
	d             dialect

	overBudget atomic.Int64 // checks that ran out of checkBudget (OverBudget)
	size       int64        // about the bytes it holds, for Cache's bound
}

// checkBudget bounds the bytes one check's wildcard patterns may scan. Each
// such pattern whose literal prefix the path has costs up to the path's
// length, so a hostile robots.txt (some 9,500 distinct "/*ab..*ab.."
// patterns in 512 KiB, none matching) made a check of an 8 KiB path scan 76
// million bytes, 66 ms, and of a longer path proportionally more. The largest
// rule set of the real corpus (2,126 wildcard patterns) scans under a third
// of it for a 2 KiB path. A check that runs out says disallowed, which is
// always within the rules, and is counted (OverBudget).
const checkBudget = 16 << 20

// OverBudget returns how many checks of r ran out of their budget of bytes
// scanned and answered disallowed without deciding.
func (r *Rules) OverBudget() int64 { return r.overBudget.Load() }

// pattern is one compiled rule. prefix is the literal text before the first
// '*' (or the whole pattern without a final '$'), which is compared first.
type pattern struct {
	text   string // the normalised pattern, without a final '$'
	source string // the normalised pattern as written
	prefix string
	wild   bool // text holds a '*'
	anchor bool // the pattern ended in '$': the match must reach the end
	allow  bool
	prio   int    // length of the pattern as written (normalised), '$' included
	mask   uint64 // byteMask of the literal bytes (all but '*')
}

// allowAll is what a 4xx robots.txt means; disallowAll, what an unreachable
// one means (everything but /robots.txt disallowed). Both are immutable.
var (
	allowAll    = fixedRules()
	disallowAll = apart(fixedRules(rule{pattern: "/"}))
)

func fixedRules(rs ...rule) *Rules {
	r := &Rules{}
	var all []pattern
	for _, ru := range rs {
		if p, ok := compile(ru); ok {
			all = append(all, p)
		}
	}
	r.index(all)
	return r
}

// apart gives r a fingerprint no compiled rule set has. Callers tell
// DisallowAll by identity (unreachable: "not now"), and a Cache shares one
// set between equal fingerprints: with that of a fetched "Disallow: /", an
// unreachable origin cached after such a site got the site's rules back,
// which a node took for a robots.txt forbidding everything.
func apart(r *Rules) *Rules {
	r.fp[0] ^= 0x80
	r.fp[15] ^= 0x5a
	return r
}

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
	var all []pattern
	var seen map[rule]struct{}
	for pass := 0; pass < 2; pass++ {
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
				// Files that repeat one rule thousands of times exist; drop
				// the copies before they cost sorting time.
				if seen == nil && len(all) >= 32 {
					seen = make(map[rule]struct{}, 2*len(all))
					for _, p := range all {
						seen[rule{allow: p.allow, pattern: p.source}] = struct{}{}
					}
				}
				if seen != nil {
					if _, dup := seen[ru]; dup {
						continue
					}
					seen[ru] = struct{}{}
				}
				if p, ok := compile(ru); ok {
					all = append(all, p)
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
	r.index(all)
	return r
}

// index sorts patterns into decision order, drops duplicates, copies their
// text into one string (so the rules do not keep the robots.txt body alive)
// and builds the groups and, for files with many literal patterns, the
// literal index.
func (r *Rules) index(all []pattern) {
	// Sorting indices moves 4 bytes per swap instead of a whole pattern;
	// it matters for the files with ten thousand rules.
	order := make([]int32, len(all))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &all[i], &all[j]
		if ka, kb := a.key(), b.key(); ka != kb {
			return ka - kb
		}
		return comparePatterns(a, b)
	})
	sorted := make([]pattern, len(all))
	for i, j := range order {
		sorted[i] = all[j]
	}
	all = slices.CompactFunc(sorted, func(a, b pattern) bool {
		return a.text == b.text && a.anchor == b.anchor && a.allow == b.allow
	})
	r.size = int64(unsafe.Sizeof(*r)) + int64(compactText(all))
	r.fp = fingerprint(all, r.CrawlDelay, r.HasCrawlDelay)
	literals := 0
	for i := range all {
		if !all[i].wild {
			literals++
		}
	}
	// A literal pattern moves to the index: a map entry (text, kinds and
	// the map's own share) in place of its pattern.
	r.size += int64(len(all)) * int64(unsafe.Sizeof(pattern{}))
	if literals >= literalIndexFrom {
		r.size += int64(literals) * literalEntryBytes
		r.lit = newLiteralIndex(all)
		all = slices.DeleteFunc(all, func(p pattern) bool { return !p.wild })
	}
	n := 0
	for n < len(all) && all[n].key() < 0 {
		n++
	}
	r.general = slices.Clip(all[:n])
	r.keyed = all[n:]
	if len(r.keyed) == 0 {
		r.keyed = nil
		return
	}
	var keys []byte
	for i := range r.keyed {
		if k := byte(r.keyed[i].key()); len(keys) == 0 || keys[len(keys)-1] != k {
			keys = append(keys, k)
			r.starts = append(r.starts, uint32(i))
		}
	}
	r.starts = append(r.starts, uint32(len(r.keyed)))
	r.keys = string(keys)
}

// literalEntryBytes is about what one pattern costs in a literalIndex's map.
const literalEntryBytes = 48

// compactText moves the patterns' text into one new string, and returns its
// length.
func compactText(ps []pattern) int {
	n := 0
	for i := range ps {
		n += len(ps[i].source)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range ps {
		b.WriteString(ps[i].source)
	}
	all := b.String()
	for i := range ps {
		p := &ps[i]
		src := all[:len(p.source)]
		all = all[len(p.source):]
		p.source, p.text, p.prefix = src, src[:len(p.text)], src[:len(p.prefix)]
	}
	return n
}

// maskFrom is the list length from which decide filters by byte sets.
const maskFrom = 8

// byteMask has bit c&63 set for every byte c of s: a cheap superset test of
// the bytes s contains.
func byteMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		m |= 1 << (s[i] & 63)
	}
	return m
}

// key is the byte a pattern is grouped by, -1 for the general list.
func (p *pattern) key() int {
	if len(p.prefix) < 2 {
		return -1
	}
	return int(p.prefix[1])
}

func compile(ru rule) (pattern, bool) {
	if ru.pattern == "" {
		return pattern{}, false // "Disallow:" alone says nothing (priority 0)
	}
	p := pattern{text: ru.pattern, source: ru.pattern, allow: ru.allow, prio: len(ru.pattern)}
	if strings.HasSuffix(p.text, "$") {
		p.text, p.anchor = p.text[:len(p.text)-1], true
	}
	p.prefix = p.text
	if i := strings.IndexByte(p.text, '*'); i >= 0 {
		p.prefix, p.wild = p.text[:i], true
	}
	p.mask = byteMask(strings.ReplaceAll(p.text, "*", ""))
	return p, true
}

// comparePatterns is decision order: longest first, Allow before Disallow at
// equal length, then by text so equal rule sets compile equal.
func comparePatterns(a, b *pattern) int {
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
}

// maxStackPath is the longest path a check normalises without allocating.
const maxStackPath = 512

// Allowed reports whether the rules allow a URL's path+query (starting with
// '/', without the fragment). It allocates nothing for paths already in
// normal form or shorter than 512 octets.
func (r *Rules) Allowed(path string) bool {
	allowed, _ := r.check(path)
	return allowed
}

// check is Allowed, saying also whether the check ran out of its budget
// (the answer is then disallowed, by no rule).
func (r *Rules) check(path string) (allowed, overBudget bool) {
	if path == "" {
		path = "/"
	}
	if path == "/robots.txt" && !r.d.noRobotsTx {
		return true, false
	}
	if len(r.general) == 0 && len(r.keyed) == 0 && r.lit == nil {
		return true, false
	}
	if !r.d.rawPercent && !isNormal(path, false) {
		var buf [maxStackPath]byte
		b := appendNormal(buf[:0], path, false)
		// decide does not keep the string, so it may alias the stack buffer.
		return r.decide(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	return r.decide(path)
}

// verdict is the best match found so far.
type verdict struct {
	prio  int
	allow bool
	found bool
}

// beatenBy reports whether a match of priority prio (an Allow when allow)
// beats v: a longer pattern wins, Allow wins a tie.
func (v verdict) beatenBy(prio int, allow bool) bool {
	return !v.found || prio > v.prio || prio == v.prio && allow && !v.allow
}

// decide finds the best match among the literal index, the path's group
// and the general list (each list in decision order, so a list is left at
// the first pattern that could no longer win) and returns its verdict.
func (r *Rules) decide(path string) (allowed, overBudget bool) {
	var v verdict
	budget := checkBudget
	if r.lit != nil {
		v = r.lit.best(path)
	}
	// Long lists first compare byte sets: a pattern needing a byte the
	// path lacks is skipped with one AND (files with hundreds of rules in
	// one group exist).
	pm, masked := ^uint64(0), false
	if len(path) >= 2 && len(r.keys) > 0 {
		if g := strings.IndexByte(r.keys, path[1]); g >= 0 {
			group := r.keyed[r.starts[g]:r.starts[g+1]]
			if len(group) > maskFrom {
				pm, masked = byteMask(path), true
			}
			v = scan(group, path, pm, v, &budget)
		}
	}
	if !masked && len(r.general) > maskFrom {
		pm = byteMask(path)
	}
	if budget >= 0 {
		v = scan(r.general, path, pm, v, &budget)
	}
	if budget < 0 {
		r.overBudget.Add(1)
		return false, true
	}
	return !v.found || v.allow, false
}

// scan returns the better of v and the first pattern of list (in decision
// order) that matches path. It takes what each wildcard pattern tried may
// scan from budget, and stops when that goes below 0.
func scan(list []pattern, path string, pm uint64, v verdict, budget *int) verdict {
	for i := range list {
		p := &list[i]
		if !v.beatenBy(p.prio, p.allow) {
			break // nothing further down the list can win
		}
		if p.mask&^pm != 0 {
			continue
		}
		if p.wild && strings.HasPrefix(path, p.prefix) {
			if *budget -= len(path) + len(p.text); *budget < 0 {
				return v
			}
		}
		if p.match(path) {
			return verdict{p.prio, p.allow, true}
		}
	}
	return v
}

// AllowedURL is Allowed for an absolute URL; a URL without a path checks "/".
func (r *Rules) AllowedURL(rawURL string) bool {
	allowed, _ := r.CheckURL(rawURL)
	return allowed
}

// CheckURL is AllowedURL saying also whether the answer, disallowed, came
// from the check running out of its budget (see OverBudget) rather than
// from a rule: a crawler counts such URLs apart, since the robots.txt that
// made them too costly to check may well allow them. OverBudget, shared by
// every origin whose rules are the same, cannot tell whose URL it was.
func (r *Rules) CheckURL(rawURL string) (allowed, overBudget bool) {
	_, path := splitURL(rawURL)
	return r.check(path)
}

// Len returns the number of compiled patterns.
func (r *Rules) Len() int { return len(r.general) + len(r.keyed) + r.lit.len() }

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
