// Package scope decides whether a canonical URL belongs to the crawl: the
// operator's include and exclude rules (regular expressions on the URL and
// domain rules on reversed host names), the trap filters that keep a crawler
// out of infinite URL spaces, per-host and per-domain budgets, and the link
// depth limit.
//
// Every rejection carries a Reason, a small enum, so a node can count why it
// dropped URLs; Filter counts them itself, safely for concurrent use.
//
// Input URLs are the crawler's canonical form (spider/urlnorm): absolute,
// http or https, lower-case scheme and host, no fragment, no credentials. The
// filter parses them with a small parser of its own that allocates nothing;
// anything else is rejected as BadURL rather than guessed at.
//
// # Domain rules
//
// A domain rule names hosts by their labels reversed, most significant first,
// as the thesis's configuration did:
//
//	th.ac.*        ac.th and every host under it (ku.ac.th, cs.ku.ac.th)
//	th.ac.+        only hosts strictly under ac.th, not ac.th itself
//	th.ac.ku       exactly ku.ac.th
//	*              every host
//	-th.ac.ku.*    a negative rule: never ku.ac.th or anything under it
//
// A host is in scope when no positive rule is given or some positive rule
// matches it, and no negative rule matches it: negative rules always win,
// whatever their specificity. Checking a host costs one map lookup per label.
//
// # Traps
//
//   - a path segment that occurs MaxSegmentRepeat times or more, the
//     symbolic-link loop of the thesis (/a/loop/loop/loop/...), as well as
//     longer cycles (/a/b/a/b/a/b);
//   - more than MaxPathDepth path segments, URLs longer than MaxURLLength;
//   - CGI-style URLs, when asked: any query ("?"), and paths ending in .cgi
//     or under /cgi-bin/, as the thesis's crawler refused them;
//   - more than MaxPagesPerHost URLs admitted for one host;
//   - more than MaxSubdomains hosts admitted under one registrable domain
//     (golang.org/x/net/publicsuffix: "a.b.example.co.uk" is under
//     "example.co.uk"), the signature of wildcard DNS.
//
// # Depth
//
// Depth limits must not depend on discovery order. A crawler that marks a URL
// "too deep" when it first sees it at depth 5 would never crawl it when it
// later finds it at depth 2. Depth keeps, through a DepthStore, the smallest
// depth each URL was seen at and re-admits a URL whenever it is seen at a
// smaller depth; when the URL had already been crawled, its links are to be
// followed again at the new depth (Decision.Reexpand). The result is the set
// of URLs whose shortest link distance from a seed is within the limit,
// whatever order pages arrive in.
package scope
