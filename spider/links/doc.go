// Package links is the crawler's URL extractor (the thesis's §9): it finds
// the links of an HTML page in one pass over its start tags (no DOM is
// built, so broken HTML costs nothing extra), resolves them as a browser
// would and returns each in the crawler's canonical form (spider/urlnorm)
// with the element and attribute it came from. The start tags are those
// golang.org/x/net/html's tokenizer returns, found in place by a scanner
// of its own (scan.go) that skips text and uninteresting markup with
// bytes.IndexByte; tests compare the two on real pages and fuzzed input.
//
// Where links come from:
//
//	element                 attribute(s)
//	a, area, link           href (with rel)
//	base                    href (the first one also becomes the base URL)
//	img                     src, lowsrc, lowres, srcset
//	frame, iframe           src
//	source                  src, srcset
//	script, embed           src
//	object                  data
//	video                   src, poster
//	audio, track            src
//	input type=image        src
//	blockquote, q, del, ins cite
//	meta http-equiv=refresh content ("5; url=...")
//	HTTP response headers   Location, Link (<...>; rel=...), Refresh
//
// Headers come first in the result (a response's headers precede its body),
// then the body's links in document order. Links in the body are resolved
// against the first <base href> of the document (as browsers do, even for
// links before it), the page URL otherwise; header links and the hrefs of
// <base> themselves against the page URL. The contents of <noscript> and <noframes> are read as markup: a
// crawler is a user agent without scripts or frames.
//
// Each link is resolved with urlnorm.AppendCanonical; candidates without a
// canonical form (mailto:, javascript:, invalid) are counted by reason in
// Result.Dropped. Options.MaxLinks caps the distinct URLs of a page, after
// the fragment is removed (page.html#a and page.html#b are one URL), not
// the sightings; new URLs past it are counted in Result.Truncated.
// Duplicates are kept (the URL tree deduplicates), but a reference repeated
// verbatim is resolved only once.
//
// The API (Extract, Extractor, Options, Result, Link) is what the node and
// the offline statistics use; it only grows.
//
// Robots directives are reported, not enforced: rel=nofollow per link,
// <meta name=robots> (and name=Options.Agent) and X-Robots-Tag (unprefixed
// or prefixed with Options.Agent) for the page.
package links
