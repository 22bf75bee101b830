package links_test

import (
	"fmt"
	"net/http"

	"github.com/kspider/kspider/spider/links"
)

func ExampleExtract() {
	page := []byte(`<html><head><base href="/docs/"></head><body>
<a href="intro.html#start">Intro</a>
<a href="https://other.example/" rel="nofollow">elsewhere</a>
<img srcset="small.png 1x, big.png 2x"></body></html>`)
	header := http.Header{"X-Robots-Tag": {"noindex"}}
	res, err := links.Extract(page, "https://example.com/index.html", header, links.Options{})
	if err != nil {
		panic(err)
	}
	for _, l := range res.Links {
		fmt.Println(l.Element, l.Attr, l.URL, l.NoFollow)
	}
	fmt.Println("noindex:", res.NoIndex)
	// Output:
	// base href https://example.com/docs/ false
	// a href https://example.com/docs/intro.html false
	// a href https://other.example/ true
	// img srcset https://example.com/docs/small.png false
	// img srcset https://example.com/docs/big.png false
	// noindex: true
}
