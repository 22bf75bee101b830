package links

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/kspider/kspider/spider/urlnorm"
)

// docHTML is the HTML of one Debian documentation package; the benchmarks
// skip when it is not installed.
const docHTML = "/usr/share/doc/postgresql-doc-15/html"

type page struct {
	url  string
	body []byte
}

func loadPages(b *testing.B) (pages []page, total int64) {
	files, _ := filepath.Glob(filepath.Join(docHTML, "*.html"))
	if len(files) == 0 {
		b.Skip(docHTML + " not found (Debian package postgresql-doc-15)")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		pages = append(pages, page{"https://www.postgresql.org/docs/15/" + filepath.Base(f), data})
		total += int64(len(data))
	}
	return pages, total
}

// BenchmarkExtract: one op is the whole documentation (1,169 pages, 16 MB
// for postgresql-doc-15), through the streaming extractor.
func BenchmarkExtract(b *testing.B) {
	pages, total := loadPages(b)
	b.SetBytes(total)
	b.ReportAllocs()
	var x Extractor
	links := 0
	for i := 0; i < b.N; i++ {
		for _, p := range pages {
			res, err := x.Extract(p.body, p.url, nil, Options{})
			if err != nil {
				b.Fatal(err)
			}
			links += len(res.Links)
		}
	}
	b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
}

// BenchmarkExtractDOM is the baseline: html.Parse builds the tree, a walk
// finds the same attributes (a, link, area href; img, script, frame,
// iframe src) and resolves them with the same canonical form, so the
// difference is the tokenizer against the DOM.
func BenchmarkExtractDOM(b *testing.B) {
	pages, total := loadPages(b)
	b.SetBytes(total)
	b.ReportAllocs()
	links := 0
	for i := 0; i < b.N; i++ {
		for _, p := range pages {
			links += len(extractDOM(b, p))
		}
	}
	b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
}

func extractDOM(b *testing.B, p page) []string {
	base, err := urlnorm.Parse(p.url)
	if err != nil {
		b.Fatal(err)
	}
	return walkDOM(b, p, func(ref string) (string, bool) {
		u, err := urlnorm.Canonical(base, ref, nil)
		return u, err == nil
	})
}

// extractDOMNetURL is the DOM baseline as a crawler without urlnorm would
// write it: net/url resolves the links.
func extractDOMNetURL(b *testing.B, p page) []string {
	base, err := url.Parse(p.url)
	if err != nil {
		b.Fatal(err)
	}
	return walkDOM(b, p, func(ref string) (string, bool) {
		r, err := url.Parse(ref)
		if err != nil {
			return "", false
		}
		return base.ResolveReference(r).String(), true
	})
}

func walkDOM(b *testing.B, p page, resolve func(string) (string, bool)) []string {
	doc, err := html.Parse(bytes.NewReader(p.body))
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			want := ""
			switch n.Data {
			case "a", "link", "area", "base":
				want = "href"
			case "img", "script", "frame", "iframe", "embed", "source", "video", "audio", "track":
				want = "src"
			}
			for _, a := range n.Attr {
				if want != "" && a.Key == want {
					if u, ok := resolve(a.Val); ok {
						out = append(out, u)
					}
					break
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// BenchmarkExtractVsDOM runs the extractor, the DOM baseline (with
// urlnorm, and with net/url as the resolver) and the bare tokenizer (z.Next
// over each page, nothing else: the ceiling of any extractor built on it)
// in turn, one pass over all pages each, and reports the ratios of their
// times. On a machine shared with other load, alternating keeps the
// comparison fairer than separate benchmarks, each under its own load.
// Each pass starts on a collected heap and allocates enough to trigger its
// own collections, so it pays for its own garbage. (Alternating smaller
// chunks was tried: a forced collection per chunk costs as much as a
// chunk, and without it the extractor's little garbage goes uncharged.)
func BenchmarkExtractVsDOM(b *testing.B) {
	pages, total := loadPages(b)
	b.SetBytes(total)
	var x Extractor
	var tExtract, tDOM, tDOMNetURL, tTokenize time.Duration
	links := 0
	timed := func(d *time.Duration, pass func(p page)) {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		for _, p := range pages {
			pass(p)
		}
		*d += time.Since(t0)
	}
	for i := 0; i < b.N; i++ {
		timed(&tExtract, func(p page) {
			res, _ := x.Extract(p.body, p.url, nil, Options{})
			links += len(res.Links)
		})
		timed(&tDOM, func(p page) { extractDOM(b, p) })
		timed(&tDOMNetURL, func(p page) { extractDOMNetURL(b, p) })
		timed(&tTokenize, func(p page) {
			z := html.NewTokenizer(bytes.NewReader(p.body))
			for z.Next() != html.ErrorToken {
			}
		})
	}
	mb := float64(total) * float64(b.N) / 1e6
	b.ReportMetric(mb/tExtract.Seconds(), "extract-MB/s")
	b.ReportMetric(float64(links)/tExtract.Seconds(), "extract-links/s")
	b.ReportMetric(mb/tDOM.Seconds(), "dom-MB/s")
	b.ReportMetric(mb/tTokenize.Seconds(), "tokenizer-MB/s")
	b.ReportMetric(tDOM.Seconds()/tExtract.Seconds(), "speedup-vs-dom")
	b.ReportMetric(tDOMNetURL.Seconds()/tExtract.Seconds(), "speedup-vs-dom-neturl")
	b.ReportMetric(tTokenize.Seconds()/tExtract.Seconds(), "speed-vs-bare-tokenizer")
}
