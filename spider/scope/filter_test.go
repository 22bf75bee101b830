package scope

import (
	"fmt"
	"strings"
	"testing"
)

func TestDomainRules(t *testing.T) {
	d, err := ParseDomainRules([]string{"th.ac.*", "th.co.+", "com.example", "-th.ac.ku.cs.*", "-th.ac.bad"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]Reason{
		"ac.th":           OK,
		"ku.ac.th":        OK,
		"www.ku.ac.th":    OK,
		"cs.ku.ac.th":     Excluded,
		"www.cs.ku.ac.th": Excluded,
		"bad.ac.th":       Excluded,
		"x.bad.ac.th":     OK, // "-th.ac.bad" names only that host
		"co.th":           OutOfDomain,
		"shop.co.th":      OK,
		"example.com":     OK,
		"www.example.com": OutOfDomain,
		"xac.th":          OutOfDomain,
		"ac.th.evil.com":  OutOfDomain,
		"[::1]":           OutOfDomain,
	} {
		if got := d.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
	all, _ := ParseDomainRules([]string{"*", "-com.evil.*"})
	if all.Match("anything.org") != OK || all.Match("www.evil.com") != Excluded {
		t.Error("* with a negative rule")
	}
	only, _ := ParseDomainRules([]string{"-com.evil.*"})
	if only.Match("good.org") != OK || only.Match("evil.com") != Excluded {
		t.Error("negative rules alone must leave other hosts in scope")
	}
}

// TestDomainRulesUnicode: canonical URLs hold A-labels, so a rule written
// with Unicode labels ("-ไทย.*") matched no host and excluded nothing.
func TestDomainRulesUnicode(t *testing.T) {
	d, err := ParseDomainRules([]string{"th.ac.*", "-ไทย.*", "-de.Bücher", "com.例え.+"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]Reason{
		"xn--o3cw4h":            Excluded, // ไทย
		"xn--o3cw4h.xn--o3cw4h": Excluded,
		"xn--bcher-kva.de":      Excluded, // bücher.de
		"www.xn--bcher-kva.de":  OutOfDomain,
		"a.xn--r8jz45g.com":     OK, // a.例え.com
		"xn--r8jz45g.com":       OutOfDomain,
		"ku.ac.th":              OK,
	} {
		if got := d.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
	if _, err := ParseDomainRules([]string{"com.a\u200db"}); err == nil {
		t.Error("an invalid IDN label accepted")
	}
}

// TestDomainRulesTrailingDot: "evil.com." and "www.evil.com." (a fully
// qualified name, which a browser and DNS resolve like evil.com, and which
// urlnorm keeps as written) escaped "-com.evil.*" and failed every
// positive rule.
func TestDomainRulesTrailingDot(t *testing.T) {
	d, err := ParseDomainRules([]string{"com.example.*", "-com.evil.*", "-com.example.bad"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]Reason{
		"evil.com.":          Excluded,
		"www.evil.com.":      Excluded,
		"www.evil.com..":     Excluded,
		"example.com.":       OK,
		"www.example.com.":   OK,
		"bad.example.com.":   Excluded,
		"x.bad.example.com.": OK,
		"other.org.":         OutOfDomain,
		".":                  OutOfDomain,
	} {
		if got := d.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
	f, err := New(Config{Domains: []string{"-com.evil.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Check("http://www.evil.com.:8080/x"); got != Excluded {
		t.Errorf("Check of a trailing-dot host: %v, want %v", got, Excluded)
	}
	for _, bad := range []string{"th..ac", "th.a*c", "", "-", "th.ac.ku/x"} {
		if _, err := ParseDomainRules([]string{bad}); err == nil {
			t.Errorf("rule %q accepted", bad)
		}
	}
}

func TestPathTraps(t *testing.T) {
	for _, c := range []struct {
		path  string
		want  Reason
		depth int
	}{
		{"/", OK, 4},
		{"/a/loop/loop", OK, 8},
		{"/a/loop/loop/loop", RepeatedSegment, 8},
		{"/a/loop/loop/loop/loop/loop/x", RepeatedSegment, 8},
		{"/a/b/a/b/a/b", RepeatedSegment, 8},
		{"/2020/01/01/news", OK, 8},
		{"/a//b///c", OK, 8},
		{"/a/b/c/d", OK, 4},
		{"/a/b/c/d/", OK, 4},
		{"/a/b/c/d/e", TooDeepPath, 4},
	} {
		if got := pathTraps(c.path, c.depth, 3); got != c.want {
			t.Errorf("pathTraps(%q, %d) = %v, want %v", c.path, c.depth, got, c.want)
		}
	}
	long := strings.Repeat("/x", 1_000_000)
	if got := pathTraps(long, 0, 3); got != RepeatedSegment {
		t.Errorf("huge path: %v", got)
	}
	var distinct strings.Builder
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&distinct, "/s%d", i)
	}
	if got := pathTraps(distinct.String(), 0, 3); got != OK {
		t.Errorf("long distinct path: %v", got)
	}
	// With the depth limit off, a loop is one wherever it starts: past the
	// first 256 segments, or with its repeats that far apart.
	var prefix strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&prefix, "/d%d", i)
	}
	for _, p := range []string{
		prefix.String() + "/loop/loop/loop",
		"/loop" + prefix.String() + "/loop/loop",
		"/a/loop" + prefix.String() + "/loop" + prefix.String() + "/loop",
	} {
		if got := pathTraps(p, 0, 3); got != RepeatedSegment {
			t.Errorf("loop in a path of %d segments: %v", strings.Count(p, "/"), got)
		}
	}
}

func TestCheck(t *testing.T) {
	c := Default()
	c.Include = []string{`^https?://[^/]*\.ac\.th(:\d+)?/`, `^https://example\.org/`}
	c.Exclude = []string{`\.(jpg|png)$`}
	c.Domains = []string{"th.ac.*", "org.example", "-th.ac.ku.cs.*"}
	c.MaxURLLength = 80
	c.RejectCGI = true
	f, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]Reason{
		"http://www.ku.ac.th/":                           OK,
		"http://www.ku.ac.th:8080/a/b?c=d":               OK,
		"http://www.ku.ac.th/img.jpg":                    Excluded,
		"http://www.cs.ku.ac.th/":                        Excluded,
		"http://www.example.com/":                        OutOfDomain,
		"http://example.org/":                            NotIncluded,
		"https://example.org/a":                          OK,
		"ftp://www.ku.ac.th/":                            BadURL,
		"www.ku.ac.th/":                                  BadURL,
		"http:///path":                                   BadURL,
		"http://user@www.ku.ac.th/":                      BadURL,
		"http://www.ku.ac.th/" + strings.Repeat("a", 80): TooLong,
		"http://www.ku.ac.th/cgi-bin/x":                  CGI,
		"http://www.ku.ac.th/search.CGI":                 CGI,
		"http://www.ku.ac.th/a/loop/loop/loop/":          RepeatedSegment,
	} {
		if got := f.Check(u); got != want {
			t.Errorf("Check(%q) = %v, want %v", u, got, want)
		}
	}
	c = Default()
	c.RejectQuery = true
	f, _ = New(c)
	if f.Check("http://e.com/a?b") != CGI || f.Check("http://e.com/a") != OK || f.Check("http://[::1]:80/x?") != CGI {
		t.Error("RejectQuery")
	}
	if _, err := New(Config{Include: []string{"("}}); err == nil {
		t.Error("bad regexp accepted")
	}
}

// TestRegistrableTrailingDot: publicsuffix refuses a name with a trailing
// dot, so "r1.evil.com.", "r2.evil.com." ... were each their own domain, and
// a wildcard-DNS trap linking its hosts that way escaped MaxSubdomains.
func TestRegistrableTrailingDot(t *testing.T) {
	for host, want := range map[string]string{
		"r1.evil.com.":       "evil.com",
		"r2.evil.com..":      "evil.com",
		"evil.com.":          "evil.com",
		"A.B.Example.CO.UK.": "example.co.uk",
		"co.uk.":             "co.uk",
		"localhost.":         "localhost",
		".":                  ".",
	} {
		if got := Registrable(host); got != want {
			t.Errorf("Registrable(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestRegistrableAndCounts(t *testing.T) {
	f, _ := New(Default())
	if Registrable("A.B.Example.CO.UK") != "example.co.uk" || Registrable("10.0.0.1") != "10.0.0.1" || Registrable("[::1]") != "[::1]" {
		t.Error("Registrable")
	}
	f.Count(TooDeep)
	if f.Counts()[TooDeep] != 1 {
		t.Error("Count")
	}
	for r := OK; r < NumReasons; r++ {
		if r.String() == "" || strings.HasPrefix(r.String(), "Reason(") {
			t.Errorf("reason %d has no name", r)
		}
	}
}
