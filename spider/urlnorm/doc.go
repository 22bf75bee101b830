// Package urlnorm turns the URL strings found on the web into the keys the
// crawler stores, in two layers.
//
// Layer 1 is resolution exactly as a browser does it: the basic URL parser of
// the WHATWG URL Standard (https://url.spec.whatwg.org/). Parse and ParseRef
// return a URL whose Href is byte-for-byte what a browser's URL object gives:
// tabs and newlines stripped, backslashes read as slashes in special schemes,
// dot segments removed (also their %2e spellings), the standard's
// percent-encode sets applied, hosts mapped by UTS #46 to punycode, IPv4
// numbers in all their forms (hex, octal, fewer than four parts) and IPv6
// addresses serialised canonically, default ports dropped.
//
// Layer 2 is the crawler's canonical form, built on layer 1 by
// AppendCanonical and Canonical. It is the key of the URL tree, so it obeys
// two rules: two spellings of one resource give one string, and one string
// never stands for two resources. It drops the fragment and the credentials,
// drops a host's trailing dots ("example.com." is the DNS name
// "example.com" resolves to; WHATWG keeps the dot, and the two would be two
// hosts crawled in full), keeps only http and https, writes "/" for an
// empty path, drops an empty
// query ("?"), upper-cases percent-escapes and decodes the escapes of
// unreserved characters (RFC 3986 §2.3) but never of reserved ones (%2F
// stays %2F: decoding it would merge two resources). Options can also strip
// session ids and sort the query. Errors are *Error values whose Reason
// (invalid, scheme, ...) a caller can count without parsing messages.
//
// Conformance: every test of the WHATWG data (web-platform-tests
// urltestdata.json, 601 cases) passes; cases this package may not pass
// would be listed with their reason in testdata/whatwg-exceptions.txt,
// which is empty. The percent-encode sets are those of the standard's
// revision that data tests (see encode.go).
//
// Hosts are held to the limits of DNS (RFC 1035): at most 253 characters
// and 63 per label, counted before the IDNA conversion (whose punycode step
// is quadratic in a label's length) and again after it. A browser parses
// longer hosts (UTS #46 VerifyDnsLength is false), but no resolver can look
// them up; the WHATWG data has no such case. With this bound no step of
// parsing is worse than linear in the input (spider/links TestLinearTime).
//
// Performance: AppendCanonical appends into the caller's buffer and parses
// nothing but the reference (the base is a parsed *URL, parsed once per
// page), so an ASCII URL costs no allocation; only IDNA hosts allocate.
//
// The query is always encoded as UTF-8; a browser would use the encoding of
// the document for a link's query, which a crawler cannot know reliably.
// Input that is not valid UTF-8 (a page in a legacy charset read undecoded)
// has its other bytes percent-encoded as they are, where a browser would
// first have decoded them: distinct bytes stay distinct URLs.
package urlnorm
