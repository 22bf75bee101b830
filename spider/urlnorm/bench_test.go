package urlnorm

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// inputSet is one of the two sets every benchmark runs on.
type inputSet struct {
	name string
	load func(*testing.B) []benchInput
}

func inputSets() []inputSet { return []inputSet{{"web100k", webInputs}, {"docrefs", docInputs}} }

func benchSets(b *testing.B, run func(b *testing.B, p *prepared)) {
	for _, set := range inputSets() {
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

// BenchmarkCanonicalVsNetURL alternates, chunk by chunk of the inputs,
// the full job (AppendCanonical), layer 1 alone (AppendHref) and the
// net/url baseline (Parse, ResolveReference, String), and reports their
// throughput and ratios, so that the machine's changing load hits all
// three alike. One op is one pass over all inputs.
func BenchmarkCanonicalVsNetURL(b *testing.B) {
	for _, set := range inputSets() {
		b.Run(set.name, func(b *testing.B) {
			p := prepare(b, set.load(b))
			const chunk = 1000
			var tCanon, tHref, tNet time.Duration
			var buf []byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for lo := 0; lo < len(p.in); lo += chunk {
					hi := min(lo+chunk, len(p.in))
					t0 := time.Now()
					for k := lo; k < hi; k++ {
						buf, _ = AppendCanonical(buf[:0], p.ours[k], p.in[k].ref, nil)
					}
					t1 := time.Now()
					for k := lo; k < hi; k++ {
						buf, _ = AppendHref(buf[:0], p.ours[k], p.in[k].ref)
					}
					t2 := time.Now()
					for k := lo; k < hi; k++ {
						if r, err := url.Parse(p.in[k].ref); err == nil {
							_ = p.theirs[k].ResolveReference(r).String()
						}
					}
					t3 := time.Now()
					tCanon += t1.Sub(t0)
					tHref += t2.Sub(t1)
					tNet += t3.Sub(t2)
				}
			}
			n := float64(len(p.in) * b.N)
			b.ReportMetric(n/tCanon.Seconds(), "canonical-URLs/s")
			b.ReportMetric(n/tHref.Seconds(), "whatwg-URLs/s")
			b.ReportMetric(n/tNet.Seconds(), "neturl-URLs/s")
			b.ReportMetric(tNet.Seconds()/tCanon.Seconds(), "canonical-vs-neturl")
		})
	}
}
