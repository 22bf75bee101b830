package links

import (
	"bytes"
	"errors"
	"hash/maphash"
	"net/http"

	"golang.org/x/net/html"

	"github.com/kspider/kspider/spider/links/htmltok"
	"github.com/kspider/kspider/spider/urlnorm"
)

// DefaultMaxLinks is the cap on distinct URLs per page when
// Options.MaxLinks is 0. Real reference pages carry thousands of links,
// most of them "page.html#anchor" (one URL once the fragment is gone).
const DefaultMaxLinks = 10_000

// storePerLink is how many candidates a page may store per unit of the
// cap: sightings repeat URLs (and some have no canonical form), so the cap
// on distinct URLs is reached only after several times as many candidates.
const storePerLink = 8

// ElementHeader is Link.Element for links from HTTP response headers; Attr
// is then the header's name ("Location", "Link", "Refresh").
const ElementHeader = "header"

// Link is one link of a page.
type Link struct {
	URL      string // canonical absolute URL (urlnorm.AppendCanonical)
	Element  string // lower-case element name, or ElementHeader
	Attr     string // lower-case attribute name, or the header's name
	Rel      string // rel of a, area, link or a Link header; lower case, single spaces
	NoFollow bool   // Rel holds the token nofollow
}

// Options configures an extraction. The zero value is the default.
type Options struct {
	// MaxLinks caps the distinct URLs in Result.Links (repeated sightings
	// of a URL already in are kept and not counted); 0 means
	// DefaultMaxLinks, a negative value means no cap.
	MaxLinks int
	// Agent is the crawler's robots name: <meta name=Agent> and
	// "X-Robots-Tag: Agent: ..." apply besides the generic ones.
	Agent string
	// Canonical configures the canonical form of the links.
	Canonical urlnorm.Options
}

// Result is what Extract found in one page.
type Result struct {
	Links []Link
	// Base is the URL the body's links were resolved against: the first
	// valid <base href>, or the page URL.
	Base string
	// NoFollow and NoIndex are the page's robots directives, from
	// <meta name=robots> and X-Robots-Tag ("none" sets both).
	NoFollow bool
	NoIndex  bool
	// Found counts every link candidate seen (an srcset counts each URL).
	Found int
	// Dropped counts candidates that have no canonical form (invalid, not
	// http/https, ...), by reason; DroppedTotal is their sum.
	Dropped      map[urlnorm.Reason]int
	DroppedTotal int
	// Truncated counts candidates left out because of the cap: those with
	// a new URL once MaxLinks distinct URLs were in, and those past a store
	// of 8×MaxLinks+64 candidates (a bound on memory). It is 0 unless a
	// page has that many.
	Truncated int
}

// ErrPageURL is returned (wrapped) when the page URL itself is not an
// absolute URL.
var ErrPageURL = errors.New("links: page URL is not an absolute URL")

// Extract returns the links of one page. body is the HTML (any broken HTML
// is fine; nil is an empty page), pageURL the URL it was fetched from
// (after redirects), header its response headers or nil. The error is
// non-nil only when pageURL is unusable.
func Extract(body []byte, pageURL string, header http.Header, opts Options) (Result, error) {
	var x Extractor
	return x.Extract(body, pageURL, header, opts)
}

// Extractor extracts links reusing its buffers between pages: a worker
// keeps one and calls Extract for each page. It is not safe for concurrent
// use.
type Extractor struct {
	raw  []byte      // the raw reference text of all candidates, back to back
	refs []candidate // candidates in document order
	out  []byte      // canonical URLs, back to back
	ends []int       // where each link's URL ends in out

	// keep bounds the candidates stored for one page, so that a page of
	// millions of tags costs memory in proportion to the cap, not to the
	// page; overflow counts the candidates seen beyond it.
	keep     int
	overflow int

	// seen holds the hashes of the page's distinct URLs while a cap
	// applies. Two URLs sharing a 64-bit hash would count as one, letting
	// one URL past the cap: harmless.
	seen     map[uint64]struct{}
	seedSet  bool
	hashSeed maphash.Seed
}

// candidate is one raw link before resolution.
type candidate struct {
	start, end int // raw[start:end]
	element    string
	attr       string
	rel        string
	header     bool // resolve against the page URL, not <base>
}

// Extract is the package-level Extract with reused buffers.
func (x *Extractor) Extract(body []byte, pageURL string, header http.Header, opts Options) (Result, error) {
	page, err := urlnorm.Parse(pageURL)
	if err != nil {
		return Result{}, errors.Join(ErrPageURL, err)
	}
	x.raw, x.refs, x.out = x.raw[:0], x.refs[:0], x.out[:0]
	x.keep, x.overflow = -1, 0
	if limit := maxLinks(opts); limit >= 0 {
		// Room for the cap plus invalid and non-http candidates.
		x.keep = storePerLink*limit + 64
	}
	var res Result
	if header != nil {
		x.fromHeaders(header, opts.Agent, &res)
	}
	baseRef, hasBase := x.scan(body, opts.Agent, &res)
	base := page
	if hasBase {
		// HTML "set the frozen base URL": a base that fails to parse, or
		// is data: or javascript:, leaves the page URL as the base.
		if b, err := urlnorm.ParseRef(page, baseRef); err == nil && b.Scheme() != "data" && b.Scheme() != "javascript" {
			base = b
		}
	}
	res.Base = base.Href()
	x.resolve(page, base, opts, &res)
	return res, nil
}

// resolve turns the candidates into canonical links, up to the cap.
func (x *Extractor) resolve(page, base *urlnorm.URL, opts Options, res *Result) {
	limit := maxLinks(opts)
	res.Found = len(x.refs) + x.overflow
	res.Truncated = x.overflow
	if len(x.refs) == 0 {
		return
	}
	raw := string(x.raw) // one allocation for every reference of the page
	n := len(x.refs)
	if limit >= 0 {
		n = min(n, limit)
	}
	res.Links = make([]Link, 0, n)
	x.ends = x.ends[:0]
	if limit >= 0 {
		if x.seen == nil {
			x.seen = make(map[uint64]struct{})
		}
		if !x.seedSet {
			x.hashSeed, x.seedSet = maphash.MakeSeed(), true
		}
		clear(x.seen)
	}
	for _, c := range x.refs {
		b := base
		if c.header {
			b = page
		}
		start := len(x.out)
		var err error
		x.out, err = urlnorm.AppendCanonical(x.out, b, raw[c.start:c.end], &opts.Canonical)
		if err != nil {
			x.out = x.out[:start]
			if res.Dropped == nil {
				res.Dropped = make(map[urlnorm.Reason]int)
			}
			var ue *urlnorm.Error
			r := urlnorm.ReasonInvalid
			if errors.As(err, &ue) {
				r = ue.Reason
			}
			res.Dropped[r]++
			res.DroppedTotal++
			continue
		}
		if limit >= 0 {
			h := maphash.Bytes(x.hashSeed, x.out[start:])
			if _, dup := x.seen[h]; !dup {
				if len(x.seen) >= limit {
					x.out = x.out[:start]
					res.Truncated++
					continue
				}
				x.seen[h] = struct{}{}
			}
		}
		x.ends = append(x.ends, len(x.out))
		res.Links = append(res.Links, Link{
			Element:  c.element,
			Attr:     c.attr,
			Rel:      c.rel,
			NoFollow: hasToken(c.rel, "nofollow"),
		})
	}
	urls := string(x.out) // one allocation for every URL of the page
	start := 0
	for i, end := range x.ends {
		res.Links[i].URL = urls[start:end]
		start = end
	}
}

// maxLinks is the cap of opts, negative for none.
func maxLinks(opts Options) int {
	if opts.MaxLinks == 0 {
		return DefaultMaxLinks
	}
	return opts.MaxLinks
}

// add records one candidate whose text is ref.
func (x *Extractor) add(ref []byte, element, attr, rel string, header bool) {
	if x.keep >= 0 && len(x.refs) >= x.keep {
		x.overflow++
		return
	}
	start := len(x.raw)
	x.raw = append(x.raw, ref...)
	x.refs = append(x.refs, candidate{start: start, end: len(x.raw), element: element, attr: attr, rel: rel, header: header})
}

// tag holds the attributes of one start tag that matter to links; values
// point into the tokenizer's buffer and live until its next token.
type tag struct {
	seen                         uint32 // bit per attribute: the first occurrence wins
	href, src, srcset, lowsrc    []byte
	lowres, data, cite, poster   []byte
	rel, typ, httpEquiv, content []byte
	name                         []byte
}

const (
	aHref = 1 << iota
	aSrc
	aSrcset
	aLowsrc
	aLowres
	aData
	aCite
	aPoster
	aRel
	aType
	aHTTPEquiv
	aContent
	aName
)

// readAttrs collects the interesting attributes of a raw start tag whose
// values need decoding (character references, NUL, CR), with upstream's
// tokenizer and its TagAttr: a start tag is tokenized the same alone as in
// its page, since it can only begin in the data state.
func (t *tag) readAttrs(raw []byte) {
	*t = tag{}
	z := html.NewTokenizer(bytes.NewReader(raw))
	if tt := z.Next(); tt == html.StartTagToken || tt == html.SelfClosingTagToken {
		t.fromTokenizer(z)
	}
}

// fromTokenizer fills t from the current tag of upstream's tokenizer.
func (t *tag) fromTokenizer(z *html.Tokenizer) {
	*t = tag{}
	for {
		key, val, more := z.TagAttr()
		bit, dst := t.slot(string(key))
		if dst != nil && t.seen&bit == 0 {
			t.seen |= bit
			*dst = val
		}
		if !more {
			return
		}
	}
}

// slot returns the bit and field of an attribute name, or nil.
func (t *tag) slot(key string) (uint32, *[]byte) {
	switch key {
	case "href":
		return aHref, &t.href
	case "src":
		return aSrc, &t.src
	case "srcset":
		return aSrcset, &t.srcset
	case "lowsrc":
		return aLowsrc, &t.lowsrc
	case "lowres":
		return aLowres, &t.lowres
	case "data":
		return aData, &t.data
	case "cite":
		return aCite, &t.cite
	case "poster":
		return aPoster, &t.poster
	case "rel":
		return aRel, &t.rel
	case "type":
		return aType, &t.typ
	case "http-equiv":
		return aHTTPEquiv, &t.httpEquiv
	case "content":
		return aContent, &t.content
	case "name":
		return aName, &t.name
	}
	return 0, nil
}

func (t *tag) has(bit uint32) bool { return t.seen&bit != 0 }

// scan tokenizes the body, recording candidates and robots directives. It
// returns the first <base href> if there is one.
func (x *Extractor) scan(body []byte, agent string, res *Result) (baseRef string, hasBase bool) {
	z := htmltok.NewTokenizer(bytes.NewReader(body))
	var t tag
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			// The end of the body: a bytes.Reader fails with nothing but
			// io.EOF, and the tokenizer has no other errors without a
			// buffer limit.
			return baseRef, hasBase
		case html.StartTagToken, html.SelfClosingTagToken:
		default:
			continue
		}
		// The name is read from the raw token: TagName would copy it, and
		// most tags are of no interest.
		el, ok := elementName(rawTagName(z.Raw()))
		if !ok {
			continue
		}
		if el == "noscript" || el == "noframes" {
			z.NextIsNotRawText()
			continue
		}
		if !t.readRaw(z.Raw()) {
			t.readAttrs(z.Raw())
		}
		switch el {
		case "a", "area", "link":
			// An empty href is a link to the page itself for a and area;
			// an empty link href fetches nothing.
			if t.has(aHref) && (el != "link" || !blank(t.href)) {
				x.add(t.href, el, "href", relString(t.rel), false)
			}
		case "base":
			if t.has(aHref) {
				if !hasBase {
					baseRef, hasBase = string(t.href), true
				}
				x.add(t.href, el, "href", "", false)
			}
		case "img":
			x.addIf(&t, aSrc, t.src, el, "src")
			x.addIf(&t, aLowsrc, t.lowsrc, el, "lowsrc")
			x.addIf(&t, aLowres, t.lowres, el, "lowres")
			if t.has(aSrcset) {
				x.addSrcset(t.srcset, el)
			}
		case "source":
			x.addIf(&t, aSrc, t.src, el, "src")
			if t.has(aSrcset) {
				x.addSrcset(t.srcset, el)
			}
		case "frame", "iframe", "script", "embed", "audio", "track":
			x.addIf(&t, aSrc, t.src, el, "src")
		case "video":
			x.addIf(&t, aSrc, t.src, el, "src")
			x.addIf(&t, aPoster, t.poster, el, "poster")
		case "object":
			x.addIf(&t, aData, t.data, el, "data")
		case "input":
			if t.has(aType) && bytes.EqualFold(bytes.TrimSpace(t.typ), []byte("image")) {
				x.addIf(&t, aSrc, t.src, el, "src")
			}
		case "blockquote", "q", "del", "ins":
			x.addIf(&t, aCite, t.cite, el, "cite")
		case "meta":
			if t.has(aHTTPEquiv) && bytes.EqualFold(bytes.TrimSpace(t.httpEquiv), []byte("refresh")) {
				if u, ok := refreshURL(t.content); ok {
					x.add(u, el, "content", "", false)
				}
			}
			if t.has(aName) && t.has(aContent) && robotsName(t.name, agent) {
				applyDirectives(t.content, res)
			}
		}
	}
}

// addIf adds an attribute's value if the tag has it and it is not blank:
// browsers fetch nothing for an empty src, data, poster or cite (as a URL
// it would be the page itself).
func (x *Extractor) addIf(t *tag, bit uint32, val []byte, el, attr string) {
	if t.has(bit) && !blank(val) {
		x.add(val, el, attr, "", false)
	}
}

func blank(v []byte) bool { return len(bytes.TrimSpace(v)) == 0 }

func (x *Extractor) addSrcset(srcset []byte, el string) {
	forEachSrcsetURL(srcset, func(u []byte) { x.add(u, el, "srcset", "", false) })
}

// rawTagName returns the tag name of a raw start tag ("<IMG src=...>")
// in lower case, in a fixed array so that it does not escape; names longer
// than any in the table come back empty.
func rawTagName(raw []byte) (name [10]byte, n int) {
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == len(name) {
			return name, 0
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		name[n] = c
		n++
	}
	return name, n
}

// elementName maps a tag name to the table's constant (so links share the
// string instead of allocating one) and says whether it matters.
func elementName(name [10]byte, n int) (string, bool) {
	switch string(name[:n]) {
	case "a":
		return "a", true
	case "area":
		return "area", true
	case "link":
		return "link", true
	case "base":
		return "base", true
	case "img":
		return "img", true
	case "source":
		return "source", true
	case "frame":
		return "frame", true
	case "iframe":
		return "iframe", true
	case "script":
		return "script", true
	case "embed":
		return "embed", true
	case "object":
		return "object", true
	case "video":
		return "video", true
	case "audio":
		return "audio", true
	case "track":
		return "track", true
	case "input":
		return "input", true
	case "blockquote":
		return "blockquote", true
	case "q":
		return "q", true
	case "del":
		return "del", true
	case "ins":
		return "ins", true
	case "meta":
		return "meta", true
	case "noscript":
		return "noscript", true
	case "noframes":
		return "noframes", true
	}
	return "", false
}

// fromHeaders records the links and directives of the response headers.
func (x *Extractor) fromHeaders(h http.Header, agent string, res *Result) {
	for _, v := range h.Values("Location") {
		x.add([]byte(v), ElementHeader, "Location", "", true)
	}
	for _, v := range h.Values("Link") {
		forEachLinkHeader(v, func(u []byte, rel string) {
			x.add(u, ElementHeader, "Link", rel, true)
		})
	}
	for _, v := range h.Values("Refresh") {
		if u, ok := refreshURL([]byte(v)); ok {
			x.add(u, ElementHeader, "Refresh", "", true)
		}
	}
	for _, v := range h.Values("X-Robots-Tag") {
		xRobotsTag(v, agent, res)
	}
}
