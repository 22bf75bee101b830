package links

import (
	"bytes"
	"errors"
	"hash/maphash"
	"math"
	"net/http"

	"golang.org/x/net/html"

	"github.com/kspider/kspider/spider/urlnorm"
)

// DefaultMaxLinks is the cap on distinct URLs per page when
// Options.MaxLinks is 0. Reference pages (API indexes, manuals on one page)
// link a few thousand pages, most of them many times as page.html#anchor.
const DefaultMaxLinks = 10000

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
	// MaxLinks caps the number of distinct URLs in Result.Links (the
	// fragment is not part of a canonical URL, so page#a and page#b are
	// one); 0 means DefaultMaxLinks, a negative value means no cap.
	// Repeated sightings of a URL within the cap are all in Links.
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
	// Truncated counts candidates left out because of the cap: new URLs
	// after MaxLinks distinct ones, and the candidates past a store of
	// 4×MaxLinks+64 distinct references or 8×MaxLinks+64 sightings (a
	// bound on memory). It is 0 unless a page has that many.
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
	raw   []byte      // the raw reference text of all candidates, back to back
	refs  []candidate // candidates in document order
	out   []byte      // canonical URLs, back to back
	spans [][2]int    // where each link's URL lies in out

	// keep bounds the distinct references stored for one page and
	// sightings all candidates, so that a page of millions of tags costs
	// memory in proportion to the cap, not to the page; overflow counts
	// the candidates seen beyond them.
	keep, sightings int
	distinctRaw     int
	overflow        int

	// rawSeen maps the hash of a reference (without its fragment) to the
	// candidate that first had it, so a repeated reference is resolved
	// once; urlSeen maps the hash of a canonical URL to its first link.
	// Collisions are checked byte for byte.
	seed    maphash.Seed
	seeded  bool
	rawSeen map[uint64]int32
	urlSeen map[uint64]int32
	result  []int32 // per candidate: its link, or -1 dropped, -2 truncated
	dec     []byte  // the tags' decoded attribute values (tag.dec)
}

// candidate is one raw link before resolution.
type candidate struct {
	start, end int   // raw[start:end]
	keyLen     int   // length of the reference before any fragment
	first      int32 // the earlier candidate with the same reference, or -1
	element    string
	attr       string
	rel        string
	page       bool // resolve against the page URL, not <base>
}

// Extract is the package-level Extract with reused buffers.
func (x *Extractor) Extract(body []byte, pageURL string, header http.Header, opts Options) (Result, error) {
	page, err := urlnorm.Parse(pageURL)
	if err != nil {
		return Result{}, errors.Join(ErrPageURL, err)
	}
	x.raw, x.refs, x.out = x.raw[:0], x.refs[:0], x.out[:0]
	x.keep, x.sightings, x.distinctRaw, x.overflow = -1, -1, 0, 0
	// Room for the cap plus invalid and non-http candidates, and for a fair
	// number of repetitions. A cap so large that 8×cap overflows bounds
	// nothing: it wrapped to a bound of 64, and a cap of 2^62 kept 64 links.
	if limit := maxLinks(opts); limit >= 0 && limit <= (math.MaxInt-64)/8 {
		x.keep, x.sightings = 4*limit+64, 8*limit+64
	}
	if !x.seeded {
		x.seed, x.seeded = maphash.MakeSeed(), true
		x.rawSeen, x.urlSeen = make(map[uint64]int32), make(map[uint64]int32)
	}
	clear(x.rawSeen)
	clear(x.urlSeen)
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

// Outcomes of a candidate besides a link index (resolve).
const (
	outTruncated = -1
	outDropped   = -2 // outDropped - reason
)

// resolve turns the candidates into canonical links, up to the cap of
// distinct URLs. A candidate repeating an earlier reference is not
// resolved again: it gets the earlier one's outcome.
func (x *Extractor) resolve(page, base *urlnorm.URL, opts Options, res *Result) {
	limit := maxLinks(opts)
	res.Found = len(x.refs) + x.overflow
	res.Truncated = x.overflow
	if len(x.refs) == 0 {
		return
	}
	raw := string(x.raw) // one allocation for every reference of the page
	res.Links = make([]Link, 0, len(x.refs))
	x.spans, x.result = x.spans[:0], x.result[:0]
	distinct := 0
	for _, c := range x.refs {
		out := int32(outTruncated)
		if c.first >= 0 {
			out = x.result[c.first]
			if out >= 0 {
				out = x.addLink(res, c, x.spans[out])
			}
		} else {
			out = x.resolveOne(page, base, c, raw, opts, limit, &distinct, res)
		}
		x.result = append(x.result, out)
		switch {
		case out == outTruncated:
			res.Truncated++
		case out <= outDropped:
			if res.Dropped == nil {
				res.Dropped = make(map[urlnorm.Reason]int)
			}
			res.Dropped[urlnorm.Reason(outDropped-out)]++
			res.DroppedTotal++
		}
	}
	urls := string(x.out) // one allocation for every URL of the page
	for i, sp := range x.spans {
		res.Links[i].URL = urls[sp[0]:sp[1]]
	}
}

// resolveOne resolves candidate c and returns its outcome: a link index,
// outTruncated or outDropped - reason.
func (x *Extractor) resolveOne(page, base *urlnorm.URL, c candidate, raw string, opts Options, limit int, distinct *int, res *Result) int32 {
	b := base
	if c.page {
		b = page
	}
	start := len(x.out)
	var err error
	x.out, err = urlnorm.AppendCanonical(x.out, b, raw[c.start:c.end], &opts.Canonical)
	if err != nil {
		x.out = x.out[:start]
		var ue *urlnorm.Error
		r := urlnorm.ReasonInvalid
		if errors.As(err, &ue) {
			r = ue.Reason
		}
		return outDropped - int32(r)
	}
	u := x.out[start:]
	h := maphash.Bytes(x.seed, u)
	i, seen := x.urlSeen[h]
	if seen {
		if sp := x.spans[i]; bytes.Equal(x.out[sp[0]:sp[1]], u) {
			x.out = x.out[:start]
			return x.addLink(res, c, sp)
		}
	}
	if limit >= 0 && *distinct >= limit {
		x.out = x.out[:start]
		return outTruncated
	}
	*distinct++
	if !seen { // else a hash collision: the URL is counted, not indexed
		x.urlSeen[h] = int32(len(x.spans))
	}
	return x.addLink(res, c, [2]int{start, len(x.out)})
}

// addLink appends the link of candidate c whose URL is out[sp[0]:sp[1]]
// and returns its index.
func (x *Extractor) addLink(res *Result, c candidate, sp [2]int) int32 {
	x.spans = append(x.spans, sp)
	res.Links = append(res.Links, Link{
		Element:  c.element,
		Attr:     c.attr,
		Rel:      c.rel,
		NoFollow: hasToken(c.rel, "nofollow"),
	})
	return int32(len(x.spans) - 1)
}

// maxLinks is the cap of opts, negative for none.
func maxLinks(opts Options) int {
	if opts.MaxLinks == 0 {
		return DefaultMaxLinks
	}
	return opts.MaxLinks
}

// add records one candidate whose text is ref. A reference seen before
// (fragments aside: they are not part of a canonical URL) is stored as a
// pointer to its first sighting and costs no bytes of raw.
func (x *Extractor) add(ref []byte, element, attr, rel string, page bool) {
	if x.sightings >= 0 && len(x.refs) >= x.sightings {
		x.overflow++
		return
	}
	key := ref
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		key = ref[:i]
	}
	h := maphash.Bytes(x.seed, key)
	if page {
		h ^= 1 // resolved against the page, not <base>
	}
	if j, ok := x.rawSeen[h]; ok {
		f := x.refs[j]
		if f.page == page && bytes.Equal(x.raw[f.start:f.start+f.keyLen], key) {
			x.refs = append(x.refs, candidate{start: f.start, end: f.end, keyLen: f.keyLen, first: j, element: element, attr: attr, rel: rel, page: page})
			return
		}
	}
	if x.keep >= 0 && x.distinctRaw >= x.keep {
		x.overflow++
		return
	}
	x.distinctRaw++
	if _, ok := x.rawSeen[h]; !ok {
		x.rawSeen[h] = int32(len(x.refs))
	}
	start := len(x.raw)
	x.raw = append(x.raw, ref...)
	x.refs = append(x.refs, candidate{start: start, end: len(x.raw), keyLen: len(key), first: -1, element: element, attr: attr, rel: rel, page: page})
}

// tag holds the attributes of one start tag that matter to links; values
// point into the tokenizer's buffer and live until its next token.
type tag struct {
	seen                         uint32 // bit per attribute: the first occurrence wins
	href, src, srcset, lowsrc    []byte
	lowres, data, cite, poster   []byte
	rel, typ, httpEquiv, content []byte
	name                         []byte
	dec                          []byte // decoded values (set), reused from tag to tag
}

// reset empties t for the next tag, keeping its buffer.
func (t *tag) reset() { *t = tag{dec: t.dec[:0]} }

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
	t.reset()
	z := html.NewTokenizer(bytes.NewReader(raw))
	if tt := z.Next(); tt == html.StartTagToken || tt == html.SelfClosingTagToken {
		t.fromTokenizer(z)
	}
}

// fromTokenizer fills t from the current tag of upstream's tokenizer.
func (t *tag) fromTokenizer(z *html.Tokenizer) {
	t.reset()
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

// scan reads the body's start tags (scanner), recording candidates and
// robots directives. It returns the first <base href> if there is one.
func (x *Extractor) scan(body []byte, agent string, res *Result) (baseRef string, hasBase bool) {
	z := scanner{s: body}
	t := tag{dec: x.dec}
	defer func() { x.dec = t.dec[:0] }()
	for {
		raw, el, clean, ok := z.next(&t)
		if !ok {
			return baseRef, hasBase
		}
		if !clean {
			t.readAttrs(raw)
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
				// A base's own href is relative to the page, not to
				// itself (HTML's fallback base URL): <base href="sub/">
				// on /d/p names /d/sub/, not /d/sub/sub/.
				x.add(t.href, el, "href", "", true)
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

// elementName maps a tag name (any case) to the table's constant, so that
// links share the string instead of allocating one, or "" if it does not
// matter to links; rawText is the name again if the tokenizer reads the
// element's contents as raw text (token.go's readStartTag), else "".
func elementName(name []byte) (el, rawText string) {
	var lower [10]byte // no name of interest is longer
	if len(name) > len(lower) {
		return "", ""
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	switch string(lower[:len(name)]) {
	case "a":
		return "a", ""
	case "area":
		return "area", ""
	case "link":
		return "link", ""
	case "base":
		return "base", ""
	case "img":
		return "img", ""
	case "source":
		return "source", ""
	case "frame":
		return "frame", ""
	case "iframe":
		return "iframe", "iframe"
	case "script":
		return "script", "script"
	case "embed":
		return "embed", ""
	case "object":
		return "object", ""
	case "video":
		return "video", ""
	case "audio":
		return "audio", ""
	case "track":
		return "track", ""
	case "input":
		return "input", ""
	case "blockquote":
		return "blockquote", ""
	case "q":
		return "q", ""
	case "del":
		return "del", ""
	case "ins":
		return "ins", ""
	case "meta":
		return "meta", ""
	case "noscript":
		return "noscript", "noscript"
	case "noframes":
		return "noframes", "noframes"
	case "noembed":
		return "", "noembed"
	case "plaintext":
		return "", "plaintext"
	case "style":
		return "", "style"
	case "textarea":
		return "", "textarea"
	case "title":
		return "", "title"
	case "xmp":
		return "", "xmp"
	}
	return "", ""
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
