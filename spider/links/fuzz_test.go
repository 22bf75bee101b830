package links

import (
	"net/http"
	"testing"
)

// FuzzExtract feeds arbitrary bytes as a page and as header values: the
// extractor must not panic, must respect the cap (of distinct URLs), and every link it returns
// must be an absolute http(s) URL.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(`<a href="/x">`), "</a>; rel=next", "5; url=/r")
	f.Add([]byte(`<base href="//h/"><img srcset="a 1x, b (,) 2x">`), "<", "url=")
	f.Add([]byte(`<meta http-equiv=refresh content="0;url='x"><noscript><a href=y>`), "", "")
	f.Add([]byte("<a href=\"\\\\x\\y\t\n\">"), `<"x">;rel="\"`, "0,")
	f.Fuzz(func(t *testing.T, body []byte, link, refresh string) {
		h := http.Header{}
		h.Set("Link", link)
		h.Set("Refresh", refresh)
		h.Set("X-Robots-Tag", refresh)
		res, err := Extract(body, "http://example.com/a/b", h, Options{MaxLinks: 50})
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[string]bool{}
		for _, l := range res.Links {
			distinct[l.URL] = true
		}
		if len(distinct) > 50 || len(res.Links) > 8*50+64 {
			t.Fatalf("%d distinct URLs in %d links, over the cap", len(distinct), len(res.Links))
		}
		if res.Found != len(res.Links)+res.DroppedTotal+res.Truncated {
			t.Fatalf("found %d != %d links + %d dropped + %d truncated", res.Found, len(res.Links), res.DroppedTotal, res.Truncated)
		}
		for _, l := range res.Links {
			if len(l.URL) < 8 || (l.URL[:7] != "http://" && l.URL[:8] != "https://") {
				t.Fatalf("link %q is not absolute http(s)", l.URL)
			}
		}
	})
}
