package robots_test

import (
	"fmt"
	"time"

	"github.com/kspider/kspider/spider/robots"
)

func Example() {
	f := robots.Parse([]byte(`User-agent: *
Disallow: /private/
Allow: /private/press/
Disallow: /*.pdf$
Crawl-delay: 2
Sitemap: https://example.com/sitemap.xml
`))
	rules := f.Rules("KSpider/1.0 (+https://example.org/bot)")
	for _, u := range []string{
		"https://example.com/private/a",
		"https://example.com/private/press/b",
		"https://example.com/doc.pdf",
		"https://example.com/doc.pdf?download=1",
		"https://example.com/robots.txt",
	} {
		fmt.Println(rules.AllowedURL(u), u)
	}
	fmt.Println(rules.CrawlDelay, f.Sitemaps)
	// Output:
	// false https://example.com/private/a
	// true https://example.com/private/press/b
	// false https://example.com/doc.pdf
	// true https://example.com/doc.pdf?download=1
	// true https://example.com/robots.txt
	// 2s [https://example.com/sitemap.xml]
}

func ExampleCache() {
	c := robots.NewCache(1000, 24*time.Hour)
	now := time.Now()
	rules := robots.Parse([]byte("User-agent: *\nDisallow: /tmp/\n")).Rules("KSpider")
	c.Put("https://a.example", rules, now, 0, 0)
	c.Put("https://b.example", rules, now, 0, 0) // same rules: same id
	fmt.Println(c.Allowed("https://a.example/tmp/x", now))
	fmt.Println(c.Allowed("https://c.example/", now))
	fmt.Println(c.Len())
	// Output:
	// false true
	// false false
	// 2 1
}
