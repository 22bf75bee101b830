// Package robots parses robots.txt files and decides whether a crawler may
// fetch a URL, following RFC 9309 (the Robots Exclusion Protocol), and holds
// the per-origin robots cache and fetch policy a crawler node uses.
//
// # Parsing
//
// Parse reads a robots.txt body the way RFC 9309 asks and the way Google's
// reference parser (github.com/google/robotstxt) tolerates real files:
//
//   - lines end in LF, CR or CRLF; a UTF-8 byte order mark (or a prefix of
//     one) at the start is skipped; '#' starts a comment;
//   - a record is "key: value"; a missing colon is tolerated when the line is
//     exactly two words ("Disallow /tmp"), as Google does; keys are matched
//     case-insensitively by prefix with Google's list of common typos
//     ("useragent", "disalow", ...); every other line is ignored and counted;
//   - consecutive user-agent lines start a group; a group runs until the next
//     user-agent line that follows a rule; rules before the first user-agent
//     line are ignored; Sitemap and unknown records do not end a group;
//   - the user-agent value is reduced to its product token (the leading run
//     of letters, '-' and '_': "Foo-Bot/1.2" is "Foo-Bot"); "*" (optionally
//     followed by white space and anything) names the default group;
//   - Crawl-delay (not in RFC 9309) is read per group, in seconds, possibly
//     fractional; Sitemap URLs are collected wherever they appear.
//
// RFC 9309 requires at least 500 KiB to be parsed. Parse reads up to
// DefaultMaxSize (512 KiB) or the limit given to ParseLimit; the rest of the
// file is ignored, and so is an incomplete last line cut by the limit, so a
// cut "Disallow: /private" never becomes "Disallow: /p". File.Truncated
// reports that it happened.
//
// # Matching
//
// Rules for one crawler are compiled with File.Rules(agent): the groups whose
// product token equals the crawler's (case-insensitively) are merged; if there
// are none, the "*" groups are merged; if there are none either, everything is
// allowed. Patterns and the URL's path+query are compared in one percent-encoding
// normal form (see normalize.go): octets outside US-ASCII, controls, space and
// the octets RFC 3986 allows nowhere in a URI (" < > \ ^ ` { | }: "/a|b" is
// "/a%7Cb") are percent-encoded, hex digits are upper case, and escapes of unreserved
// characters (ALPHA DIGIT - . _ ~) are decoded, as RFC 9309 section 2.2.2 asks;
// a URL's '*' and '$' are the octets a rule writes %2A and %24 (section 2.2.3).
// '*' matches any run of octets and a final '$' anchors the end. The longest
// matching pattern (in octets of its normal form) wins and Allow wins a tie;
// "/robots.txt" itself is always allowed. A compiled Rules sorts its patterns
// by that priority, so the first pattern that matches decides; groups them by
// the byte after the leading '/', so a path only meets its own group and the
// wildcard-led patterns; skips patterns needing a byte the path lacks with
// one AND; and, for sets of 64 or more wildcard-free patterns (sites that
// list thousands of URLs), looks those up by the path's prefixes in a map.
// A literal prefix is compared before any wildcard work; a check allocates
// nothing. A check's wildcard patterns scan at most 16 MiB of path between
// them (checkBudget: tens of thousands of '*' patterns each scanning a long
// path would cost seconds); a check that runs out answers disallowed, which
// is within any rules, and Rules.OverBudget counts it.
//
// # Differences from Google's parser
//
// The differential test (diff_test.go) compares every decision with
// github.com/jimsmart/grobotstxt, a port of Google's parser, over the real
// robots.txt corpus, and fails on any disagreement that is not explained by
// one of these deliberate differences (testdata/google-differences.md has
// the figures):
//
//   - percent-encoding: RFC 9309 makes "/%7Efoo" and "/~foo" the same path
//     and lower- and upper-case hex the same escape; Google only upper-cases
//     the escapes in patterns, never in the URL, and never decodes them;
//     nor does it match "%2A" and "%24" with a URL's '*' and '$';
//     raw space and control octets in patterns are encoded here, not there;
//   - index.html: Google turns "Allow: /d/index.html" into an extra
//     "Allow: /d/$"; RFC 9309 has no such rule;
//   - size limit: Google's library reads the whole file, this package reads
//     DefaultMaxSize (RFC 9309: at least 500 KiB);
//   - line length: Google cuts lines at 16,663 octets, this package does not;
//   - /robots.txt: RFC 9309 says it is implicitly allowed, Google's
//     library does not special-case it;
//   - product tokens: RFC 9309 allows letters, '-' and '_' in one, so
//     "User-agent: MJ12bot" names "MJ"; the Go port reads most RFC 9110
//     token characters ("MJ12bot") but stops at '!' and '&';
//   - a bug of the Go port, not of Google: when it rewrites a pattern it
//     clears bit 5 of escape digits ("%3c" becomes "%\x13C").
//
// # Fetching and caching
//
// Fetcher fetches /robots.txt for an origin and maps the outcome to rules as
// RFC 9309 section 2.3 asks: up to five redirects are followed, each to
// its Location's path as written (net/url would rebuild "/a%2Fb|c" from its
// decoded form, "/a/b%7Cc": another resource; a relative one, "../x", is
// resolved on the paths as written, RFC 3986 section 5.2; a '%' that starts
// no escape, "/home%", is followed as browsers do); a 4xx answer
// (or too many redirects) means no robots.txt and everything is allowed; a
// 5xx answer or a network failure means everything is disallowed until a
// retry, which backs off exponentially — unless the origin's robots.txt was
// fetched before: Source then keeps using that older copy, retrying on the
// same back-off, for up to Source.StaleFor (DefaultStaleFor, 24 hours) after
// it stopped being fresh, as RFC 9309 section 2.4 allows for an unreachable
// file, and disallows everything only after that. Cache maps an origin to the id of a
// compiled rule set (identical rule sets are shared, as in the thesis's
// robots cache; DisallowAll, which stands for an unreachable file, never
// with a fetched file's), holds a bounded number of origins and rule sets
// of a bounded size between them (DefaultCacheBytes, estimated from the
// patterns; origins of the largest sets are evicted first and counted), and
// forgets each after at most its time to live (24 hours by default).
// Source fetches an origin's file once for all its callers; a fetch whose
// caller's context ended before its answer came whole caches nothing, is
// counted when its request went out (Source.Abandoned), and callers that
// waited for it fetch again rather than take its DisallowAll, which said
// only "the caller gave up".
package robots
