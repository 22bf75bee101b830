package scope

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/urlnorm"
)

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		"http://www.ku.ac.th/a/loop/loop/loop/", "https://[::1]:8080/x?y", "http://h/cgi-bin/a.cgi",
		"http://a.b.example.co.uk/", "http://user@h/", "http://", "https://h:/", "http://[::1/", "http://h#/a/a/a",
		"http://10.0.0.1/" + strings.Repeat("a/", 40),
	} {
		f.Add(s, "th.ac.*")
	}
	f.Add("http://a.xn--o3cw4h/", "ไทย.*")
	f.Add("http://xn--bcher-kva.de./", "de.BÜCHER.+")
	for _, r := range []string{"th.ac.+", "-th.ac.ku", "*", "uk.co.example.+", "com.h"} {
		f.Add("http://h.com/", r)
		f.Add("http://a.b.example.co.uk/", r)
		f.Add("http://ku.ac.th/", r)
	}
	f.Fuzz(func(t *testing.T, u, rule string) {
		c := Default()
		c.Domains = []string{rule, "-" + rule}
		c.RejectCGI = true
		c.MaxPagesPerHost = 3
		c.MaxSubdomains = 2
		flt, err := New(c)
		if err != nil {
			c.Domains = nil
			if flt, err = New(c); err != nil {
				t.Fatal(err)
			}
		}
		r := flt.Check(u)
		if a := flt.Admit(u); r != OK && a != r {
			t.Fatalf("Check %v but Admit %v", r, a)
		}
		if r >= NumReasons {
			t.Fatalf("reason %d out of range", r)
		}
		if p, ok := splitURL(u); ok {
			if !strings.HasPrefix(p.path, "/") || p.host == "" {
				t.Fatalf("splitURL(%q) = %+v", u, p)
			}
			Registrable(p.host)
			if d, err := ParseDomainRules([]string{rule}); err == nil {
				if got, want := d.Match(p.host), naiveDomainMatch(rule, p.host); got != want {
					t.Fatalf("rule %q host %q: Match %v, naive %v", rule, p.host, got, want)
				}
			}
		}
	})
}

// naiveDomainMatch is one domain rule applied the slow, obvious way: reverse
// the host's labels and compare them with the rule's.
func naiveDomainMatch(rule, host string) Reason {
	rule = strings.ToLower(strings.TrimSpace(rule))
	neg := strings.HasPrefix(rule, "-")
	rule = strings.TrimPrefix(rule, "-")
	labels := strings.Split(strings.TrimRight(host, "."), ".")
	slices.Reverse(labels)
	rev := strings.Join(labels, ".")
	if !isASCII(rule) {
		// Unicode labels are compared as A-labels (ParseDomainRules).
		base, suffix := rule, ""
		if strings.HasSuffix(rule, ".*") || strings.HasSuffix(rule, ".+") {
			base, suffix = rule[:len(rule)-2], rule[len(rule)-2:]
		}
		labels := strings.Split(base, ".")
		slices.Reverse(labels)
		a, err := urlnorm.ASCIIHost(strings.Join(labels, "."))
		if err != nil {
			return OK // refused by ParseDomainRules, never compared
		}
		labels = strings.Split(a, ".")
		slices.Reverse(labels)
		rule = strings.Join(labels, ".") + suffix
	}
	var hit bool
	switch {
	case rule == "*":
		hit = true
	case strings.HasSuffix(rule, ".*"):
		base := strings.TrimSuffix(rule, ".*")
		hit = rev == base || strings.HasPrefix(rev, base+".")
	case strings.HasSuffix(rule, ".+"):
		hit = strings.HasPrefix(rev, strings.TrimSuffix(rule, ".+")+".")
	default:
		hit = rev == rule
	}
	switch {
	case neg && hit:
		return Excluded
	case neg, hit:
		return OK
	}
	return OutOfDomain
}

func BenchmarkCheck(b *testing.B) {
	c := Default()
	c.Domains = []string{"th.ac.*", "com.example.+", "-th.ac.ku.cs.*"}
	c.RejectCGI = true
	f, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	urls := []string{
		"http://www.ku.ac.th/news/2024/05/article.html",
		"https://shop.example.com/product/blue-widget?color=blue",
		"http://www.cs.ku.ac.th/~user/index.html",
		"http://other.org/a/b/c",
		"http://www.ku.ac.th/a/loop/loop/loop/x",
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.Check(urls[i%len(urls)])
	}
}

// BenchmarkCheckRegexp adds one include and one exclude expression, the
// operator's costlier option.
func BenchmarkCheckRegexp(b *testing.B) {
	c := Default()
	c.Include = []string{`^https?://[^/]*\.(ac\.th|example\.com)(:\d+)?/`}
	c.Exclude = []string{`\.(jpg|png|gif|pdf)$`}
	f, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Check("http://www.ku.ac.th/news/2024/05/article.html")
	}
}

// BenchmarkAdmit is Check with the outcome counted (the budgets are the
// node's).
func BenchmarkAdmit(b *testing.B) {
	c := Default()
	c.MaxPagesPerHost = 1 << 40
	f, _ := New(c)
	urls := []string{"http://www.ku.ac.th/news/a.html", "https://shop.example.com/p?c=1", "http://x.y.example.co.uk/"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.Admit(urls[i%len(urls)])
	}
}

func BenchmarkDepthSeen(b *testing.B) {
	d := &Depth{Max: 5, Store: NewMemDepth()}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.Seen("http://www.ku.ac.th/news/a.html", i%7)
	}
}

// BenchmarkCheckVsURLParse interleaves blocks of Filter.Check and of
// net/url.Parse on the same URLs and reports the ratio, which holds on a
// noisy shared machine where absolute times do not.
func BenchmarkCheckVsURLParse(b *testing.B) {
	c := Default()
	c.Domains = []string{"th.ac.*", "com.example.+", "-th.ac.ku.cs.*"}
	c.RejectCGI = true
	f, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	urls := []string{
		"http://www.ku.ac.th/news/2024/05/article.html",
		"https://shop.example.com/product/blue-widget?color=blue",
		"http://www.cs.ku.ac.th/~user/index.html",
		"http://other.org/a/b/c",
	}
	const block = 1024
	var check, parse time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for i := 0; i < block; i++ {
			f.Check(urls[i%len(urls)])
		}
		t1 := time.Now()
		for i := 0; i < block; i++ {
			url.Parse(urls[i%len(urls)])
		}
		check += t1.Sub(t0)
		parse += time.Since(t1)
		n += block
	}
	b.ReportMetric(float64(check.Nanoseconds())/float64(n), "check-ns")
	b.ReportMetric(float64(parse.Nanoseconds())/float64(n), "urlparse-ns")
	b.ReportMetric(float64(check)/float64(parse), "check/urlparse")
}
