package robots

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jimsmart/grobotstxt"
)

// benchRobots is a typical mid-sized robots.txt: a CMS default plus
// site-specific rules and wildcards (27 patterns for "*").
const benchRobots = `User-agent: *
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php
Disallow: /wp-includes/
Disallow: /cgi-bin/
Disallow: /search
Disallow: /*?s=
Disallow: /*?p=
Disallow: /*&preview=
Disallow: /tag/*/page/
Disallow: /author/
Disallow: /feed/
Disallow: /*/feed/$
Disallow: /comments/
Disallow: /trackback/
Disallow: /*.php$
Disallow: /*.inc$
Disallow: /checkout/
Disallow: /cart/
Disallow: /my-account/
Disallow: /private/
Allow: /private/public/
Disallow: /tmp/
Disallow: /*sessionid=
Disallow: /print/
Disallow: /login
Disallow: /register
Disallow: /api/

User-agent: Googlebot
Disallow: /nogoogle/

Sitemap: https://www.example.com/sitemap.xml
`

var benchURLs = []string{
	"https://www.example.com/2024/05/some-article-title/",
	"https://www.example.com/category/news/page/2/",
	"https://www.example.com/wp-admin/admin-ajax.php",
	"https://www.example.com/search?q=robots",
	"https://www.example.com/product/blue-widget?color=blue&size=xl",
	"https://www.example.com/private/public/file.pdf",
	"https://www.example.com/tag/go/page/3/",
	"https://www.example.com/%7Euser/index.html",
}

// BenchmarkCachedCheck is the cost a node pays per URL: find the origin's
// rules in the cache and match the path.
func BenchmarkCachedCheck(b *testing.B) {
	c := NewCache(100_000, 0)
	now := time.Now()
	rules := Parse([]byte(benchRobots)).Rules("KSpider/1.0")
	for i := 0; i < 50_000; i++ {
		c.Put(fmt.Sprintf("https://host%d.example.net", i), rules, now, 0, 0)
	}
	c.Put("https://www.example.com", rules, now, 0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := c.Allowed(benchURLs[i%len(benchURLs)], now); !ok {
			b.Fatal("not cached")
		}
	}
}

// BenchmarkRulesAllowed is the match alone, without the cache lookup.
func BenchmarkRulesAllowed(b *testing.B) {
	rules := Parse([]byte(benchRobots)).Rules("KSpider")
	paths := make([]string, len(benchURLs))
	for i, u := range benchURLs {
		paths[i] = PathOf(u)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rules.Allowed(paths[i%len(paths)])
	}
}

// BenchmarkParse parses the sample file and compiles its rules.
func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchRobots)))
	b.ReportAllocs()
	for b.Loop() {
		Parse([]byte(benchRobots)).Rules("KSpider")
	}
}

// BenchmarkCorpusParse parses and compiles every corpus file kept in
// memory (every 10th file, about 5,000, or all with KSPIDER_ROBOTS_FULL=1) and
// reports throughput.
func BenchmarkCorpusParse(b *testing.B) {
	bodies := loadCorpus(b)
	var total int64
	for _, body := range bodies {
		total += int64(len(body))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		for _, body := range bodies {
			Parse(body).Rules("KSpider")
		}
	}
	b.ReportMetric(float64(len(bodies)), "files/op")
}

// BenchmarkCorpusCheck matches corpus-derived paths against compiled corpus
// rules (rules and paths prepared outside the timer).
func BenchmarkCorpusCheck(b *testing.B) {
	bodies := loadCorpus(b)
	type job struct {
		r    *Rules
		path string
	}
	var jobs []job
	for i, body := range bodies {
		r := Parse(body).Rules("KSpider")
		for _, p := range samplePaths(newRand(uint64(i)), body, 8) {
			jobs = append(jobs, job{r, p})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		j := &jobs[i%len(jobs)]
		j.r.Allowed(j.path)
	}
}

func loadCorpus(b *testing.B) [][]byte {
	b.Helper()
	keep := func(i int) bool { return i%10 == 0 }
	if os.Getenv("KSPIDER_ROBOTS_FULL") == "1" {
		keep = nil
	}
	var bodies [][]byte
	eachCorpusFile(b, keep, func(f corpusFile) { bodies = append(bodies, f.body) })
	return slices.Clip(bodies)
}

// BenchmarkBaselineURLParse is the same-run baseline: net/url.Parse of the
// URLs BenchmarkCachedCheck checks, a cost every crawler pays per URL.
func BenchmarkBaselineURLParse(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := url.Parse(benchURLs[i%len(benchURLs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineGoogle is Google's parser (the Go port) deciding the same
// URLs; it has no compiled form, so each check parses the file.
func BenchmarkBaselineGoogle(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		grobotstxt.AgentAllowed(benchRobots, "KSpider", benchURLs[i%len(benchURLs)])
	}
}

// BenchmarkCheckVsURLParse interleaves blocks of cached checks and of
// net/url.Parse calls on the same URLs, so both see the same machine load,
// and reports their ratio (check time / parse time): the figure that
// survives a noisy shared machine.
func BenchmarkCheckVsURLParse(b *testing.B) {
	c := NewCache(100_000, 0)
	now := time.Now()
	rules := Parse([]byte(benchRobots)).Rules("KSpider/1.0")
	for i := 0; i < 50_000; i++ {
		c.Put(fmt.Sprintf("https://host%d.example.net", i), rules, now, 0, 0)
	}
	c.Put("https://www.example.com", rules, now, 0, 0)
	const block = 1024
	var check, parse time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		for i := 0; i < block; i++ {
			c.Allowed(benchURLs[i%len(benchURLs)], now)
		}
		t1 := time.Now()
		for i := 0; i < block; i++ {
			url.Parse(benchURLs[i%len(benchURLs)])
		}
		check += t1.Sub(t0)
		parse += time.Since(t1)
		n += block
	}
	b.ReportMetric(float64(check.Nanoseconds())/float64(n), "check-ns")
	b.ReportMetric(float64(parse.Nanoseconds())/float64(n), "urlparse-ns")
	b.ReportMetric(float64(check)/float64(parse), "check/urlparse")
}
