package robots

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// DefaultMaxSize is how much of a robots.txt Parse reads. RFC 9309 asks
// for at least 500 KiB.
const DefaultMaxSize = 512 << 10

// File is a parsed robots.txt: its groups, in file order, and the records
// outside groups.
type File struct {
	groups []group

	// Sitemaps lists the Sitemap: values in file order, as written.
	Sitemaps []string
	// Lines counts the lines read, IgnoredLines those that were not a
	// record Parse understood (garbage, HTML, unknown keys, rules outside
	// any group).
	Lines, IgnoredLines int
	// Truncated reports that the body was longer than the parse limit and
	// its tail was ignored.
	Truncated bool

	d dialect
}

// group is one user-agent group: the product tokens it names (lower case,
// "*" for the default group) and its rules in file order.
type group struct {
	agents     []string
	rules      []rule
	crawlDelay time.Duration // -1 when the group has no valid Crawl-delay
}

// rule is one Allow or Disallow line, its pattern already normalised.
type rule struct {
	allow   bool
	pattern string
}

// dialect switches on the behaviours of Google's parser that RFC 9309 does
// not share; only the differential test sets them, to name the cause of a
// disagreement.
type dialect struct {
	rawPercent bool // escape patterns as Google does and leave paths alone
	indexHTML  bool // "Allow: /d/index.htm*" also allows "/d/$"
	maxLine    int  // cut lines longer than this (Google: 16663)
	noRobotsTx bool // do not allow /robots.txt implicitly
	tokenChars bool // user-agent tokens run over RFC 9110 token characters
	hexBug     bool // with rawPercent: the Go port's toUpper also mangles digits
}

// Parse parses a robots.txt body, reading at most DefaultMaxSize bytes. It
// accepts any input: what is not a record is skipped and counted.
func Parse(body []byte) *File { return ParseLimit(body, DefaultMaxSize) }

// ParseLimit is Parse with a size limit; limit <= 0 means no limit.
func ParseLimit(body []byte, limit int) *File {
	return parse(body, limit, dialect{})
}

type parser struct {
	f    *File
	d    dialect
	cur  *group // the group rules go to, nil before the first user-agent
	open bool   // cur still accepts user-agent lines (no rule seen yet)
}

func parse(body []byte, limit int, d dialect) *File {
	f := &File{d: d}
	if limit > 0 && len(body) > limit {
		f.Truncated = true
		body = body[:limit]
		// An incomplete last line would turn "Disallow: /private" into
		// "Disallow: /p", so the cut line goes too.
		if i := lastLineEnd(body); i >= 0 {
			body = body[:i+1]
		} else {
			body = nil
		}
	}
	// A BOM, or the start of one, is skipped, as Google does.
	for _, b := range []byte{0xEF, 0xBB, 0xBF} {
		if len(body) == 0 || body[0] != b {
			break
		}
		body = body[1:]
	}
	// One copy of the body as a string; every key, value and pattern is a
	// substring of it (or a normalised copy), so lines cost no allocation.
	text := string(body)
	p := parser{f: f, d: d}
	start := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\n' && c != '\r' {
			continue
		}
		p.line(text[start:i])
		if c == '\r' && i+1 < len(body) && body[i+1] == '\n' {
			i++
		}
		start = i + 1
	}
	if start < len(body) {
		p.line(text[start:])
	}
	return f
}

func lastLineEnd(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' || b[i] == '\r' {
			return i
		}
	}
	return -1
}

// keyKind is what a record's key names.
type keyKind uint8

const (
	keyUnknown keyKind = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
)

func (p *parser) line(b string) {
	p.f.Lines++
	if p.d.maxLine > 0 && len(b) > p.d.maxLine {
		b = b[:p.d.maxLine]
	}
	key, value, ok := splitRecord(b)
	if !ok {
		if len(strings.TrimSpace(b)) > 0 {
			p.f.IgnoredLines++
		}
		return
	}
	switch parseKey(key) {
	case keyUserAgent:
		if !p.open || p.cur == nil {
			p.f.groups = append(p.f.groups, group{crawlDelay: -1})
			p.cur = &p.f.groups[len(p.f.groups)-1]
			p.open = true
		}
		p.cur.agents = append(p.cur.agents, agentToken(value, p.d))
	case keyAllow, keyDisallow:
		if p.cur == nil {
			p.f.IgnoredLines++
			return
		}
		p.open = false
		allow := parseKey(key) == keyAllow
		pat := p.pattern(value)
		p.cur.rules = append(p.cur.rules, rule{allow: allow, pattern: pat})
		if allow && p.d.indexHTML {
			if i := strings.LastIndexByte(pat, '/'); i >= 0 && strings.HasPrefix(pat[i:], "/index.htm") {
				p.cur.rules = append(p.cur.rules, rule{allow: true, pattern: pat[:i+1] + "$"})
			}
		}
	case keySitemap:
		p.f.Sitemaps = append(p.f.Sitemaps, value)
	case keyCrawlDelay:
		if p.cur == nil {
			p.f.IgnoredLines++
			return
		}
		if d, ok := parseDelay(value); ok && p.cur.crawlDelay < 0 {
			p.cur.crawlDelay = d
		}
	default:
		p.f.IgnoredLines++
	}
}

func (p *parser) pattern(v string) string {
	if p.d.rawPercent {
		return googleEscape(v, p.d.hexBug)
	}
	return normalizePattern(v)
}

// splitRecord splits a line into key and value as Google's parser does: the
// comment is dropped, the key ends at the first ':', or, without a colon, at
// white space when the line holds exactly two words.
func splitRecord(line string) (key, value string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimSpace(line)
	sep := strings.IndexByte(line, ':')
	if sep < 0 {
		sep = strings.IndexAny(line, " \t")
		if sep < 0 {
			return "", "", false
		}
		if strings.ContainsAny(strings.TrimSpace(line[sep:]), " \t") {
			return "", "", false
		}
	}
	key = strings.TrimSpace(line[:sep])
	if key == "" {
		return "", "", false
	}
	return key, strings.TrimSpace(line[sep+1:]), true
}

// keyPrefixes maps key prefixes, common typos included (the list Google's
// parser accepts, plus crawl-delay), to what they name. Order matters:
// "allow" must not be tried on "disallow" first, and it is not a prefix of it.
var keyPrefixes = [...]struct {
	prefix string
	kind   keyKind
}{
	{"user-agent", keyUserAgent}, {"useragent", keyUserAgent}, {"user agent", keyUserAgent},
	{"allow", keyAllow},
	{"disallow", keyDisallow}, {"dissallow", keyDisallow}, {"dissalow", keyDisallow},
	{"disalow", keyDisallow}, {"diaslow", keyDisallow}, {"diasllow", keyDisallow},
	{"disallaw", keyDisallow},
	{"sitemap", keySitemap}, {"site-map", keySitemap},
	{"crawl-delay", keyCrawlDelay}, {"crawldelay", keyCrawlDelay}, {"crawl delay", keyCrawlDelay},
}

func parseKey(key string) keyKind {
	for _, k := range keyPrefixes {
		if len(key) >= len(k.prefix) && strings.EqualFold(key[:len(k.prefix)], k.prefix) {
			return k.kind
		}
	}
	return keyUnknown
}

// agentToken reduces a user-agent value to the product token a crawler is
// matched by, lower-cased: "*" (also "* anything", as Google reads it) or the
// leading run of identifier characters. (The Go port of Google's parser
// takes most RFC 9110 token characters instead, so "Yahoo! Slurp" is
// "Yahoo" there and "yahoo!" nowhere; the dialect knob reproduces that.)
func agentToken(v string, d dialect) string {
	if len(v) > 0 && v[0] == '*' && (len(v) == 1 || unicode.IsSpace(rune(v[1]))) {
		return "*"
	}
	if d.tokenChars {
		i := 0
		for i < len(v) && (isIdentChar(v[i]) || '0' <= v[i] && v[i] <= '9' || strings.IndexByte("#$%'*+.^`|~", v[i]) >= 0) {
			i++
		}
		return strings.ToLower(v[:i])
	}
	return strings.ToLower(ProductToken(v))
}

// ProductToken returns the product token of a user agent: "KSpider" from
// "KSpider/1.0 (+http://example.org/bot)", the leading run of the characters
// RFC 9309 allows in one (letters, '-' and '_'). It is what robots.txt
// groups are matched against.
func ProductToken(ua string) string {
	i := 0
	for i < len(ua) && isIdentChar(ua[i]) {
		i++
	}
	return ua[:i]
}

func isIdentChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_'
}

// maxCrawlDelay bounds what a Crawl-delay can ask for; a larger value is a
// typo or a wish never to be crawled, and the node caps it anyway.
const maxCrawlDelay = 24 * time.Hour

func parseDelay(v string) (time.Duration, bool) {
	s, err := strconv.ParseFloat(v, 64)
	if errors.Is(err, strconv.ErrRange) {
		// Past a float64 ("never": 400 nines) s is +Inf, capped below;
		// taken for no Crawl-delay, it let the site be crawled at full
		// speed.
		err = nil
	}
	if err != nil || math.IsNaN(s) || s < 0 {
		return 0, false
	}
	if s > maxCrawlDelay.Seconds() {
		return maxCrawlDelay, true
	}
	return time.Duration(s * float64(time.Second)), true
}

// Groups returns the number of user-agent groups.
func (f *File) Groups() int { return len(f.groups) }

// Agents returns the product tokens the file names, lower case, each once,
// in file order ("*" included when present).
func (f *File) Agents() []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range f.groups {
		for _, a := range g.agents {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}
