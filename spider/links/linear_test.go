package links

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kspider/kspider/spider/urlnorm"
)

// hostile builds an input of size about n of one hostile kind.
type hostile struct {
	name string
	page func(n int) string // a page for Extract
}

func repeat(s string, n int) string { return strings.Repeat(s, max(1, n/len(s))) }

func link(href string) string { return `<a href="` + href + `">x</a>` }

var hostiles = []hostile{
	// One link whose host is a single long IDN label: punycode is
	// quadratic in a label's length, so the host limits must cut it first.
	{"idn-label", func(n int) string { return link("http://" + repeat("é", n) + "/") }},
	{"idn-distinct", func(n int) string { return link("http://" + distinctRunes(n) + "/") }},
	{"idn-distinct-dots", func(n int) string { return link("http://" + strings.ReplaceAll(distinctRunes(n), "a", ".") + "/") }},
	{"idn-label-pct", func(n int) string { return link("http://" + repeat("%C3%A9", n) + "/") }},
	{"punycode-label", func(n int) string { return link("http://xn--" + repeat("a", n) + "/") }},
	{"ascii-host", func(n int) string { return link("http://" + repeat("a", n) + ".com/") }},
	{"dots", func(n int) string { return link("http://" + repeat("a.", n) + "com/") }},
	{"idn-dots", func(n int) string { return link("http://" + repeat("é.", n) + "com/") }},
	{"numeric-dots", func(n int) string { return link("http://" + repeat("1.", n) + "1/") }},
	{"ipv6", func(n int) string { return link("http://[" + repeat("1:", n) + "]/") }},
	{"dotdot", func(n int) string { return link("http://h/" + repeat("a/../", n)) }},
	{"leading-dotdot", func(n int) string { return link(repeat("../", n) + "x") }},
	{"pct-dotdot", func(n int) string { return link("http://h/" + repeat("a/%2e%2E/", n)) }},
	{"pct-path", func(n int) string { return link("http://h/" + repeat("%41%2f%zz", n)) }},
	{"pct-query", func(n int) string { return link("http://h/?" + repeat("a=%41&", n)) }},
	{"slashes", func(n int) string { return link("http://h" + repeat("/", n)) }},
	{"backslashes", func(n int) string { return link("http:" + repeat("\\", n) + "h/") }},
	{"userinfo", func(n int) string { return link("http://" + repeat("a@", n) + "h/") }},
	{"spaces", func(n int) string { return link(repeat(" \t\n", n) + "x") }},
	{"huge-attr", func(n int) string { return `<a title="` + repeat("x", n) + `" href="/y">` }},
	{"many-attrs", func(n int) string { return `<a ` + repeat(`t=x `, n) + `href="/y">` }},
	{"entities", func(n int) string { return link("/" + repeat("&amp;&#x41;&lt", n)) }},
	{"srcset", func(n int) string { return `<img srcset="` + repeat("a.png 1x, ", n) + `">` }},
	{"srcset-parens", func(n int) string { return `<img srcset="a.png (` + repeat("(,", n) + `">` }},
	{"refresh", func(n int) string {
		return `<meta http-equiv=refresh content="0; url=` + repeat("'a", n) + `">`
	}},
	{"bases", func(n int) string { return repeat(`<base href="/b/">`, n) + link("x") }},
	{"many-links", func(n int) string { return repeat(`<a href="/p#a">`, n) }},
	{"many-idn-links", func(n int) string { return repeat(`<a href="http://é.com/">`, n) }},
	{"open-tag", func(n int) string { return "<a href=" + repeat("x", n) }},
	{"comments", func(n int) string { return repeat("<!--", n) + link("x") }},
	// The scanner's states (scan.go): each must move on, never back.
	{"comment-dashes", func(n int) string { return "<!--" + repeat("--!-", n) + "-->" + link("x") }},
	{"bogus-comments", func(n int) string { return repeat("<!x<?y</ z", n) + link("x") }},
	{"lt", func(n int) string { return repeat("<", n) + link("x") }},
	{"tags", func(n int) string { return repeat("<b c=d e>", n) + link("x") }},
	{"end-tags", func(n int) string { return repeat("</a x='>'>", n) + link("x") }},
	{"open-quote", func(n int) string { return `<b title='` + repeat(`<a href='`, n) }},
	{"raw-end-tags", func(n int) string { return "<title>" + repeat("</titl</TITLEx", n) + "</title>" + link("x") }},
	{"script-escapes", func(n int) string { return "<script><!--" + repeat("<script>-<!--</script>--", n) + link("x") }},
	{"script-double-escape", func(n int) string { return "<script><!--<script>" + repeat("</scrip<-</", n) + link("x") }},
	{"noscripts", func(n int) string { return repeat("<noscript><a href=/n>", n) }},
}

// distinctRunes returns about n bytes of ASCII letters and distinct CJK
// ideographs: the punycode encoder loops over the whole label once per
// distinct code point.
func distinctRunes(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("aaaaaaaaa")
		b.WriteRune(rune(0x4e00 + i%20000))
	}
	return b.String()
}

// TestLinearTime grows each hostile input 16× and checks that the time of
// Extract (and, for a single link, of urlnorm's canonical form, which is
// what `kspider normalize` runs) grows about 16×, not 256×. The bound, 64×,
// is the geometric middle of the two: noise on a loaded machine (cache
// misses of the larger input, the race detector's cost for large
// allocations) does not decide, while anything quadratic
// fails. The ratio is measured within the test, and a ratio over the bound
// is measured again before failing.
func TestLinearTime(t *testing.T) {
	const small = 16 << 10
	base, _ := urlnorm.Parse("http://example.com/dir/page.html")
	for _, h := range hostiles {
		t.Run(h.name, func(t *testing.T) {
			// Each run is prepared outside the timing: converting the
			// page to bytes is a large allocation, which the race
			// detector makes far dearer than the linear scan it feeds.
			var x Extractor
			extract := func(page string) func() {
				body := []byte(page)
				return func() {
					if _, err := x.Extract(body, "http://example.com/dir/page.html", nil, Options{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			buf := make([]byte, 0, 4<<20)
			normalize := func(page string) func() {
				// The href of the page's first link, as normalize gets it.
				href := ""
				if i := strings.Index(page, `href="`); i >= 0 {
					href = page[i+6:]
					if j := strings.IndexByte(href, '"'); j >= 0 {
						href = href[:j]
					}
				}
				return func() { urlnorm.AppendCanonical(buf[:0], base, href, nil) }
			}
			for _, f := range []struct {
				name    string
				prepare func(string) func()
			}{{"extract", extract}, {"normalize", normalize}} {
				const limit = 64.0
				ratio := 0.0
				a, b := f.prepare(h.page(small)), f.prepare(h.page(16*small))
				for attempt := 0; attempt < 4; attempt++ {
					ratio = float64(timePer(b)) / float64(timePer(a))
					if ratio < limit {
						break
					}
				}
				if ratio >= limit {
					t.Errorf("%s: 16× the input took %.1f× the time (linear: 16×, quadratic: 256×)", f.name, ratio)
				}
			}
		})
	}
}

// timePer returns the best time of f over a few runs, after one to warm
// the buffers up. The time is the CPU time of the goroutine's thread, not
// the wall clock: on a machine shared with other processes a run of a few
// milliseconds is often descheduled, which would count against the larger
// input only.
func timePer(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC() // no collection of the previous input's garbage inside
	f()
	best := time.Duration(1<<63 - 1)
	for i := 0; i < 5; i++ {
		start := threadCPU()
		f()
		best = min(best, threadCPU()-start)
	}
	return max(best, time.Microsecond)
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}
