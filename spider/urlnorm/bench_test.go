package urlnorm

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/kspider/kspider/tools/dataset"
)

// docHTML is the HTML of one Debian documentation package; the benchmarks
// skip when it is not installed.
const docHTML = "/usr/share/doc/postgresql-doc-15/html"

// benchInput is one reference and the page it appears on.
type benchInput struct {
	base, ref string
}

// webInputs are the first 100,000 URLs of urls-web.txt.zst, each resolved
// against a fixed page (they are absolute, so the base only costs its
// check).
func webInputs(b *testing.B) []benchInput {
	path, ok := dataset.Path(dataset.URLsWeb)
	if !ok {
		b.Skip("urls-web.txt.zst not found")
	}
	var in []benchInput
	_, err := dataset.Lines(path, 100000, func(line []byte) error {
		in = append(in, benchInput{"http://example.com/dir/page.html", string(line)})
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return in
}

// docInputs are the raw href/src values of the documentation's pages,
// each with its page's URL: mostly relative references.
func docInputs(b *testing.B) []benchInput {
	files, _ := filepath.Glob(filepath.Join(docHTML, "*.html"))
	if len(files) == 0 {
		b.Skip(docHTML + " not found (Debian package postgresql-doc-15)")
	}
	var in []benchInput
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		page := "https://www.postgresql.org/docs/15/" + filepath.Base(f)
		z := html.NewTokenizer(strings.NewReader(string(data)))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			for _, more := z.TagName(); more; {
				var k, v []byte
				k, v, more = z.TagAttr()
				if string(k) == "href" || string(k) == "src" {
					in = append(in, benchInput{page, string(v)})
				}
			}
		}
	}
	return in
}

// prepared holds the inputs with their bases parsed once, by both
// implementations, outside the timed loop.
type prepared struct {
	in       []benchInput
	ours     []*URL
	theirs   []*url.URL
	baseSeen map[string]int
}

func prepare(b *testing.B, in []benchInput) *prepared {
	p := &prepared{in: in, baseSeen: map[string]int{}}
	var ou *URL
	var tu *url.URL
	last := ""
	for _, x := range in {
		if x.base != last {
			var err error
			if ou, err = Parse(x.base); err != nil {
				b.Fatal(err)
			}
			if tu, err = url.Parse(x.base); err != nil {
				b.Fatal(err)
			}
			last = x.base
		}
		p.ours = append(p.ours, ou)
		p.theirs = append(p.theirs, tu)
	}
	return p
}

func benchSets(b *testing.B, run func(b *testing.B, p *prepared)) {
	for _, set := range []struct {
		name string
		load func(*testing.B) []benchInput
	}{{"web100k", webInputs}, {"docrefs", docInputs}} {
		b.Run(set.name, func(b *testing.B) {
			p := prepare(b, set.load(b))
			b.ReportAllocs()
			b.ResetTimer()
			run(b, p)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "URLs/s")
		})
	}
}

// BenchmarkCanonical is the full job: WHATWG resolution and the canonical
// form, appended into a reused buffer. One op is one URL.
func BenchmarkCanonical(b *testing.B) {
	benchSets(b, func(b *testing.B, p *prepared) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			k := i % len(p.in)
			buf, _ = AppendCanonical(buf[:0], p.ours[k], p.in[k].ref, nil)
		}
	})
}

// BenchmarkWHATWG is layer 1 alone (AppendHref).
func BenchmarkWHATWG(b *testing.B) {
	benchSets(b, func(b *testing.B, p *prepared) {
		var buf []byte
		for i := 0; i < b.N; i++ {
			k := i % len(p.in)
			buf, _ = AppendHref(buf[:0], p.ours[k], p.in[k].ref)
		}
	})
}

// BenchmarkNetURL is the baseline: net/url Parse and ResolveReference
// and String, which is neither browser-exact nor canonical.
func BenchmarkNetURL(b *testing.B) {
	benchSets(b, func(b *testing.B, p *prepared) {
		for i := 0; i < b.N; i++ {
			k := i % len(p.in)
			r, err := url.Parse(p.in[k].ref)
			if err != nil {
				continue
			}
			_ = p.theirs[k].ResolveReference(r).String()
		}
	})
}
