package robots

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type check struct {
	path  string
	allow bool
}

func expect(t *testing.T, body, agent string, checks ...check) {
	t.Helper()
	r := Parse([]byte(body)).Rules(agent)
	for _, c := range checks {
		if got := r.Allowed(c.path); got != c.allow {
			t.Errorf("agent %q path %q: allowed=%v, want %v\nrobots.txt:\n%s", agent, c.path, got, c.allow, body)
		}
	}
}

func TestGroups(t *testing.T) {
	body := "user-agent: a\nuser-agent: B\ndisallow: /ab\n\nuser-agent: *\ndisallow: /all\n" +
		"user-agent: c\nallow: /\ndisallow: /c\n# later group for a merges\nUser-Agent: A\nDisallow: /a2\n"
	expect(t, body, "a", check{"/ab", false}, check{"/a2", false}, check{"/all", true}, check{"/c", true})
	expect(t, body, "b/2.0 (+http://x)", check{"/ab", false}, check{"/a2", true}, check{"/all", true})
	expect(t, body, "C", check{"/c", false}, check{"/ab", true}, check{"/all", true})
	expect(t, body, "other", check{"/all", false}, check{"/ab", true})
	// A group naming the agent, even with no rules, excludes "*".
	expect(t, "user-agent: *\ndisallow: /\nuser-agent: kspider\n", "KSpider/1.0", check{"/x", true})
	// No group applies: everything allowed.
	expect(t, "user-agent: other\ndisallow: /\n", "kspider", check{"/", true})
	// Rules before any user-agent are ignored.
	expect(t, "disallow: /\nuser-agent: x\ndisallow: /y", "kspider", check{"/", true})
	// Sitemap and unknown lines do not end the agent list of a group.
	expect(t, "user-agent: a\nsitemap: http://x/s.xml\ncrawl-delay: 3\nuser-agent: kspider\ndisallow: /p\n",
		"kspider", check{"/p", false}, check{"/q", true})
	// "* comment" is the default group, as Google reads it.
	expect(t, "user-agent: * everyone\ndisallow: /x\n", "kspider", check{"/x", false})
	// A product token with a version in robots.txt is matched by its token.
	expect(t, "user-agent: KSpider/2.0\ndisallow: /x\n", "kspider", check{"/x", false})
}

func TestLongestMatch(t *testing.T) {
	body := "user-agent: *\nallow: /p\ndisallow: /\nallow: /folder/\ndisallow: /folder/sub\n" +
		"allow: /same\ndisallow: /same\ndisallow: /page\nallow: /page.htm\n"
	expect(t, body, "x",
		check{"/p", true}, check{"/q", false}, check{"/folder/a", true}, check{"/folder/sub/x", false},
		check{"/same", true}, check{"/page", false}, check{"/page.html", true}, check{"/robots.txt", true})
}

func TestWildcards(t *testing.T) {
	body := "user-agent: *\ndisallow: /*.gif$\ndisallow: /a*b*c\nallow: /a*bxc\ndisallow: /end$\ndisallow: /mid$dle\n" +
		"disallow: /*/secret\ndisallow: *tail\ndisallow: /q?*id=\n"
	expect(t, body, "x",
		check{"/x.gif", false}, check{"/x.gif?y", true}, check{"/x.gifs", true},
		check{"/a/b/c/d", false}, check{"/ab", true}, check{"/abxc", true}, check{"/aabbxc", true},
		check{"/end", false}, check{"/end/", true}, check{"/mid$dle", false}, check{"/middle", true},
		check{"/x/y/secret/z", false}, check{"/secret", true}, check{"/xtail", false},
		check{"/q?a=1&id=2", false}, check{"/q?a=1", true})
}

func TestPercentEncoding(t *testing.T) {
	// RFC 9309 section 2.2.2 examples.
	body := "user-agent: *\ndisallow: /foo/bar?baz=quz\ndisallow: /foo/bar/ツ\ndisallow: /foo/bar/%E3%83%85\n" +
		"disallow: /foo/bar/%62%61%7A\ndisallow: /a%2fb\ndisallow: /sp ace\n"
	expect(t, body, "x",
		check{"/foo/bar?baz=quz", false},
		check{"/foo/bar/%E3%83%84", false}, check{"/foo/bar/ツ", false},
		check{"/foo/bar/%E3%83%85", false}, check{"/foo/bar/%e3%83%85", false},
		check{"/foo/bar/baz", false}, check{"/foo/bar/%62az", false},
		check{"/a%2Fb", false}, check{"/a%2fb", false}, check{"/a/b", true},
		check{"/sp%20ace", false}, check{"/sp ace", false})
	expect(t, "user-agent: *\ndisallow: /foo/bar?baz=https://foo.bar\n", "x",
		check{"/foo/bar?baz=https%3A%2F%2Ffoo.bar", true}, check{"/foo/bar?baz=https://foo.bar", false})
}

// TestEncodedSpecialChars: RFC 9309 section 2.2.3 has a rule write '*' and
// '$' as %2A and %24 to match them literally ("/path/foo-%24" matches
// ".../path/foo-$"), but the URL's raw '*' and '$' never met the escapes, so
// a URL so disallowed was fetched.
func TestEncodedSpecialChars(t *testing.T) {
	body := "user-agent: *\ndisallow: /path/file-with-a-%2A.html\ndisallow: /path/foo-%24\n" +
		"disallow: /odata?%24filter=\ndisallow: /lit-%2a$\ndisallow: /mid$dle\nallow: /x*y\n"
	expect(t, body, "x",
		check{"/path/file-with-a-*.html", false}, check{"/path/file-with-a-%2A.html", false},
		check{"/path/file-with-a-%2a.html", false}, check{"/path/file-with-a-x.html", true},
		check{"/path/foo-$", false}, check{"/path/foo-%24", false}, check{"/path/foo-", true},
		check{"/odata?$filter=a", false}, check{"/odata?filter=a", true},
		check{"/lit-*", false}, check{"/lit-*x", true}, check{"/lit-x", true},
		check{"/mid$dle", false}, check{"/mid%24dle", false}, check{"/middle", true},
		check{"/x*y", true}, check{"/xay", true})
	// A '*' of the URL is an octet: the wildcard still matches it, a
	// final '$' still anchors.
	expect(t, "user-agent: *\ndisallow: /a*$\nallow: /a$$\n", "x",
		check{"/a*", false}, check{"/a$", true}, check{"/a%24", true}, check{"/a", false})
}

// TestBarePercent: decoding "%41" after a bare '%' wrote "%A", which with
// the next byte read as another escape: the path "/%%414" was "/%A4", so
// "Allow: /%A4" let it through a "Disallow: /".
func TestBarePercent(t *testing.T) {
	expect(t, "user-agent: *\ndisallow: /\nallow: /%A4\nallow: /p/%%41\nallow: /q/%4%41\n", "x",
		check{"/%A4", true}, check{"/%a4", true},
		check{"/%%414", false}, check{"/%%4144", false}, check{"/%%61", false},
		check{"/p/%%41", true}, check{"/p/%%41x", true}, check{"/p/%A", false},
		check{"/q/%4%41", true}, check{"/q/%4A", false}, check{"/q/%4%61", false})
}

func TestLexical(t *testing.T) {
	// BOM, CR, CRLF, comments, missing colon, typos, garbage.
	body := "\xEF\xBB\xBFUser-Agent: *\rDisallow /nocolon\r\nDisalow: /typo # comment\n<html>garbage</html>\n" +
		"allow : /nocolon/ok\n\x00\x01\xff: junk\nDisallow /two words\n"
	f := Parse([]byte(body))
	expect(t, body, "x", check{"/nocolon", false}, check{"/nocolon/ok", true}, check{"/typo", false}, check{"/two", true})
	if f.IgnoredLines != 3 {
		t.Errorf("IgnoredLines = %d, want 3", f.IgnoredLines)
	}
	// Partial BOM.
	expect(t, "\xEF\xBBuser-agent: *\ndisallow: /\n", "x", check{"/a", false})
}

func TestSitemapAndCrawlDelay(t *testing.T) {
	body := "sitemap: https://e.com/a.xml\nuser-agent: kspider\ncrawl-delay: 2.5\ncrawl-delay: 9\ndisallow: /k\n" +
		"user-agent: *\ncrawl-delay: x\nSitemap: https://e.com/b.xml\n"
	f := Parse([]byte(body))
	if got := strings.Join(f.Sitemaps, " "); got != "https://e.com/a.xml https://e.com/b.xml" {
		t.Errorf("Sitemaps = %q", got)
	}
	r := f.Rules("KSpider")
	if !r.HasCrawlDelay || r.CrawlDelay != 2500*time.Millisecond {
		t.Errorf("crawl delay = %v %v, want 2.5s", r.CrawlDelay, r.HasCrawlDelay)
	}
	if r := f.Rules("other"); r.HasCrawlDelay {
		t.Errorf("invalid crawl-delay accepted: %v", r.CrawlDelay)
	}
}

// TestCrawlDelayPastFloat: a Crawl-delay too large for a float64 (400
// nines: "never") asks for the longest delay, as 1e300 does; it was taken
// for no Crawl-delay at all, and the site crawled at full speed.
func TestCrawlDelayPastFloat(t *testing.T) {
	for _, v := range []string{"1e300", "1e400", strings.Repeat("9", 400), "9" + strings.Repeat("9", 400) + ".5"} {
		r := Parse([]byte("user-agent: *\ncrawl-delay: " + v + "\n")).Rules("x")
		if !r.HasCrawlDelay || r.CrawlDelay != maxCrawlDelay {
			t.Errorf("crawl-delay %.10s...: %v %v, want %v", v, r.CrawlDelay, r.HasCrawlDelay, maxCrawlDelay)
		}
	}
	for _, v := range []string{"-1e400", "1e-400x", "inf!"} {
		if r := Parse([]byte("user-agent: *\ncrawl-delay: " + v + "\n")).Rules("x"); r.HasCrawlDelay {
			t.Errorf("crawl-delay %q accepted: %v", v, r.CrawlDelay)
		}
	}
}

func TestSizeLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("user-agent: *\n")
	for b.Len() < 600<<10 {
		b.WriteString("disallow: /filler/path/that/is/long\n")
	}
	b.WriteString("disallow: /beyond\n")
	f := Parse([]byte(b.String()))
	if !f.Truncated {
		t.Fatal("600 KiB file not reported truncated")
	}
	expect(t, b.String(), "x", check{"/filler/path/that/is/long", false}, check{"/beyond", true})
	// The line cut by the limit is dropped, not shortened.
	body := "user-agent: *\ndisallow: /private\n"
	r := ParseLimit([]byte(body), len(body)-4).Rules("x")
	if !r.Allowed("/p") {
		t.Error("cut line \"disallow: /priv\" was kept")
	}
	if ParseLimit([]byte(b.String()), 0).Truncated {
		t.Error("limit 0 truncated")
	}
}

func TestPathOfAndOrigin(t *testing.T) {
	for _, c := range []struct{ in, path, origin string }{
		{"http://e.com", "/", "http://e.com"},
		{"http://e.com/", "/", "http://e.com"},
		{"http://e.com:8080/a/b?c=d#f", "/a/b?c=d", "http://e.com:8080"},
		{"https://e.com?q", "/?q", "https://e.com"},
		{"https://e.com#f", "/", "https://e.com"},
		{"/a?b", "/a?b", ""},
	} {
		if got := PathOf(c.in); got != c.path {
			t.Errorf("PathOf(%q) = %q, want %q", c.in, got, c.path)
		}
		if got := OriginOf(c.in); got != c.origin {
			t.Errorf("OriginOf(%q) = %q, want %q", c.in, got, c.origin)
		}
	}
}

func TestAllowedAllocatesNothing(t *testing.T) {
	r := Parse([]byte("user-agent: *\ndisallow: /a*b\nallow: /c\ndisallow: /d$\n")).Rules("x")
	for _, p := range []string{"/axxb", "/%7Ea/%e3%83%84/ü", "/plain/path?q=1"} {
		if n := testing.AllocsPerRun(100, func() { r.Allowed(p) }); n != 0 {
			t.Errorf("Allowed(%q) allocates %v times", p, n)
		}
	}
}

// TestRFCExamples are the examples of RFC 9309 section 5.
func TestRFCExamples(t *testing.T) {
	simple := `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`
	expect(t, simple, "foobot/2.1", check{"/example/page.html", true}, check{"/example/allowed.gif", true},
		check{"/example/other", false}, check{"/", false}, check{"/robots.txt", true})
	expect(t, simple, "BarBot", check{"/example/page.html", false}, check{"/example/other", true}, check{"/x.gif", true})
	expect(t, simple, "bazbot", check{"/example/page.html", false}, check{"/publications/", true})
	expect(t, simple, "quxbot", check{"/example/page.html", true}, check{"/x.gif", true})
	expect(t, simple, "other", check{"/x.gif", false}, check{"/x.gif?a", true}, check{"/example/a", false},
		check{"/publications/a", true}, check{"/", true})
	longest := "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
	expect(t, longest, "foobot", check{"/example/page/", true}, check{"/example/page/disallowed.gif", false},
		check{"/example/page/other.gif", true})
}

// TestCheckBudget: a hostile robots.txt of some 9,500 distinct wildcard
// patterns in 512 KiB, none matching a path of "ab"s, made each check scan
// the path once per pattern: 76 million bytes for an 8 KiB path, and more
// the longer the path. A check now stops at checkBudget bytes scanned and
// answers disallowed, counted; a short path, and a path one of the
// patterns matches early, are decided as before.
func TestCheckBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nAllow: /ok\n")
	for i := 0; b.Len() < DefaultMaxSize-64; i++ {
		x := strings.NewReplacer("0", "a", "1", "b").Replace(fmt.Sprintf("%020b", i))
		fmt.Fprintf(&b, "Disallow: /*%s*%s\n", x, x)
	}
	r := Parse([]byte(b.String())).Rules("kspider")
	long := "/" + strings.Repeat("ab", 4000) + "0123456789"
	if r.Allowed(long) {
		t.Errorf("a path the rules cannot be checked against within the budget was allowed")
	}
	if n := r.OverBudget(); n != 1 {
		t.Errorf("OverBudget %d, want 1", n)
	}
	if !r.Allowed("/ok") || !r.Allowed("/abab") || r.Allowed("/"+strings.Repeat("a", 60)) {
		t.Errorf("short paths decided wrongly")
	}
	if n := r.OverBudget(); n != 1 {
		t.Errorf("OverBudget %d after short paths, want 1", n)
	}
}

// TestEncodedUnsafeOctets: RFC 3986 allows '|', '^', '{', '}', '\',
// '"', '<', '>' and '`' nowhere in a URI, so a URI carries them encoded and
// RFC 9309 compares "/a|b" and "/a%7Cb" as one path. A crawl's canonical
// URLs keep '|' and '^' raw (WHATWG), and "Disallow: /a%7Cb" let "/a|b" be
// fetched.
func TestEncodedUnsafeOctets(t *testing.T) {
	expect(t, "User-agent: *\nDisallow: /a%7Cb\nDisallow: /x^y\nDisallow: /q?c={%7d\nDisallow: /*%5E$\n", "kspider",
		check{"/a|b", false}, check{"/a%7cb/c", false}, check{"/a%7Cb", false},
		check{"/x%5Ey", false}, check{"/x%5ey", false}, check{"/x^y", false},
		check{"/q?c=%7B}", false}, check{"/z/^", false},
		check{"/a/b", true}, check{"/a%2Fb", true}, check{"/x%5Ez", true}, check{"/z/^z", true})
}
