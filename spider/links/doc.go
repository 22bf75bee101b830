// Package links is the crawler's URL extractor (the thesis's §9): it finds
// the links of an HTML page in one pass of golang.org/x/net/html's tokenizer
// (no DOM is built, so broken HTML costs nothing extra) - the copy in
// spider/links/htmltok, which gives upstream's tokens without upstream's
// per-attribute allocations - resolves them as a
// browser would and returns each in the crawler's canonical form
// (spider/urlnorm) with the element and attribute it came from.
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
// links before it), the page URL otherwise; header links against the page
// URL. The contents of <noscript> and <noframes> are read as markup: a
// crawler is a user agent without scripts or frames.
//
// Each link is resolved with urlnorm.AppendCanonical; candidates without a
// canonical form (mailto:, javascript:, invalid) are counted by reason in
// Result.Dropped; candidates with a new URL once Options.MaxLinks distinct
// URLs are in (default 10,000; the fragment is not part of a canonical
// URL, so "p.html#a" and "p.html#b" count once) in Result.Truncated.
// Duplicates are kept: the URL tree deduplicates.
//
// The API (Extract, Extractor, Options, Result, Link) is what the node and
// the offline statistics use; it only grows.
//
// Robots directives are reported, not enforced: rel=nofollow per link,
// <meta name=robots> (and name=Options.Agent) and X-Robots-Tag (unprefixed
// or prefixed with Options.Agent) for the page.
package links
