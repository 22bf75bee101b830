package links

import (
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/kspider/kspider/spider/urlnorm"
)

func urls(ls []Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.URL)
	}
	return out
}

func TestExtractTable(t *testing.T) {
	page := `<!doctype html><html><head>
<meta http-equiv="Refresh" content="5; URL='/refresh'">
<link rel="Stylesheet  Alternate" href="/s.css">
<base href="/dir/"><base href="/ignored/">
</head><body>
<a href="a.html#frag">a</a>
<a href="b.html" rel="NoFollow">b</a>
<a href=c.html href=ignored.html>c</a>
<img src="i.png" lowsrc="lo.png" lowres="lr.png" srcset="x1.png 1x, x2.png 2x,y.png">
<picture><source srcset="s1.webp 100w, s2.webp (max-width: 10px) 200w"></picture>
<frame src="f.html"><iframe src="if.html"></iframe>
<script src="s.js"></script><embed src="e.swf"><object data="o.bin"></object>
<video src="v.mp4" poster="p.jpg"><track src="t.vtt"></video><audio src="au.mp3"></audio>
<input type="IMAGE" src="btn.png"><input type="text" src="not.png">
<blockquote cite="bq"></blockquote><q cite="q"></q><del cite="del"></del><ins cite="ins"></ins>
<area href="map">
<a href="mailto:x@example.com">mail</a><a href="javascript:void(0)">js</a>
<noscript><a href="ns.html">ns</a></noscript>
<a href="http://[broken">x</a>
`
	h := http.Header{}
	h.Add("Location", "/moved")
	h.Add("Link", `</style.css>; rel="preload"; as=style, <https://other.example/x>; rel=next`)
	res, err := Extract([]byte(page), "http://example.com/p/page.html", h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http://example.com/moved",
		"http://example.com/style.css",
		"https://other.example/x",
		"http://example.com/refresh",
		"http://example.com/s.css",
		"http://example.com/dir/",
		"http://example.com/ignored/",
		"http://example.com/dir/a.html",
		"http://example.com/dir/b.html",
		"http://example.com/dir/c.html",
		"http://example.com/dir/i.png",
		"http://example.com/dir/lo.png",
		"http://example.com/dir/lr.png",
		"http://example.com/dir/x1.png",
		"http://example.com/dir/x2.png",
		"http://example.com/dir/y.png",
		"http://example.com/dir/s1.webp",
		"http://example.com/dir/s2.webp",
		"http://example.com/dir/f.html",
		"http://example.com/dir/if.html",
		"http://example.com/dir/s.js",
		"http://example.com/dir/e.swf",
		"http://example.com/dir/o.bin",
		"http://example.com/dir/v.mp4",
		"http://example.com/dir/p.jpg",
		"http://example.com/dir/t.vtt",
		"http://example.com/dir/au.mp3",
		"http://example.com/dir/btn.png",
		"http://example.com/dir/bq",
		"http://example.com/dir/q",
		"http://example.com/dir/del",
		"http://example.com/dir/ins",
		"http://example.com/dir/map",
		"http://example.com/dir/ns.html",
	}
	if got := urls(res.Links); !reflect.DeepEqual(got, want) {
		t.Errorf("links:\n got %q\nwant %q", got, want)
	}
	if res.Base != "http://example.com/dir/" {
		t.Errorf("base %q", res.Base)
	}
	if res.DroppedTotal != 3 || res.Found != len(want)+3 || res.Truncated != 0 {
		t.Errorf("found %d dropped %d (%v) truncated %d", res.Found, res.DroppedTotal, res.Dropped, res.Truncated)
	}
	byURL := map[string]Link{}
	for _, l := range res.Links {
		byURL[l.URL] = l
	}
	check := func(u, el, attr, rel string, nofollow bool) {
		t.Helper()
		l, ok := byURL[u]
		if !ok || l.Element != el || l.Attr != attr || l.Rel != rel || l.NoFollow != nofollow {
			t.Errorf("%s: got %+v, want %s %s rel=%q nofollow=%v", u, l, el, attr, rel, nofollow)
		}
	}
	check("http://example.com/dir/b.html", "a", "href", "nofollow", true)
	check("http://example.com/s.css", "link", "href", "stylesheet alternate", false)
	check("http://example.com/moved", ElementHeader, "Location", "", false)
	check("https://other.example/x", ElementHeader, "Link", "next", false)
	check("http://example.com/refresh", "meta", "content", "", false)
	check("http://example.com/dir/x2.png", "img", "srcset", "", false)
	if res.NoFollow || res.NoIndex {
		t.Errorf("page directives set without a robots meta")
	}
}

func TestRobotsDirectives(t *testing.T) {
	for _, tc := range []struct {
		html, xrt, agent  string
		nofollow, noindex bool
	}{
		{`<meta name="robots" content="NOFOLLOW">`, "", "", true, false},
		{`<meta name="ROBOTS" content="noindex, follow">`, "", "", false, true},
		{`<meta name="robots" content="none">`, "", "", true, true},
		{`<meta name="kspider" content="nofollow">`, "", "kspider", true, false},
		{`<meta name="otherbot" content="nofollow">`, "", "kspider", false, false},
		{``, "noindex, nofollow", "", true, true},
		{``, "otherbot: noindex", "kspider", false, false},
		{``, "KSpider: noindex", "kspider", false, true},
		{``, "unavailable_after: 25 Jun 2010 15:00:00 PST", "", false, false},
	} {
		h := http.Header{}
		if tc.xrt != "" {
			h.Set("X-Robots-Tag", tc.xrt)
		}
		res, err := Extract([]byte(tc.html), "http://example.com/", h, Options{Agent: tc.agent})
		if err != nil {
			t.Fatal(err)
		}
		if res.NoFollow != tc.nofollow || res.NoIndex != tc.noindex {
			t.Errorf("%q / %q: nofollow %v noindex %v, want %v %v", tc.html, tc.xrt, res.NoFollow, res.NoIndex, tc.nofollow, tc.noindex)
		}
	}
}

func TestBaseFallback(t *testing.T) {
	for _, b := range []string{"javascript:void(0)", "data:text/html,x", "http://[bad", ""} {
		page := `<base href="` + b + `"><a href="x">`
		res, err := Extract([]byte(page), "http://example.com/d/p", nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Base != "http://example.com/d/p" || len(res.Links) == 0 || res.Links[len(res.Links)-1].URL != "http://example.com/d/x" {
			t.Errorf("base %q: base %q, links %+v", b, res.Base, res.Links)
		}
	}
	res, _ := Extract([]byte(`<a href="x"><base href="https://other.example/b/"><base href="/ignored/">`), "http://example.com/", nil, Options{})
	if res.Links[0].URL != "https://other.example/b/x" {
		t.Errorf("a base after a link does not apply to it: %+v", res.Links)
	}
}

// TestBaseHrefAgainstPage: the link of a <base href> was resolved against
// the base it sets, so <base href="sub/"> on /d/p gave /d/sub/sub/, a URL
// the page never names, and, served by a site with that base on every
// page, a chain /d/sub/sub/sub/... of new URLs.
func TestBaseHrefAgainstPage(t *testing.T) {
	page := `<a href="x"><base href="sub/"><base href="../up/"><base href="?q"><a href="sub/">`
	res, err := Extract([]byte(page), "http://example.com/d/p", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http://example.com/d/sub/x",
		"http://example.com/d/sub/",
		"http://example.com/up/",
		"http://example.com/d/p?q",
		"http://example.com/d/sub/sub/",
	}
	if got := urls(res.Links); !reflect.DeepEqual(got, want) {
		t.Errorf("links:\n got %q\nwant %q", got, want)
	}
	if res.Base != "http://example.com/d/sub/" {
		t.Errorf("base %q", res.Base)
	}
}

func TestEmptyAttributes(t *testing.T) {
	page := `<img src=""><script src=" "></script><link href=""><iframe src></iframe><a href="">self</a><area href>`
	res, err := Extract([]byte(page), "http://example.com/p", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://example.com/p", "http://example.com/p"}
	if got := urls(res.Links); !reflect.DeepEqual(got, want) || res.Links[0].Element != "a" || res.Links[1].Element != "area" {
		t.Errorf("links %+v, want the a and area self links only", res.Links)
	}
}

func TestCap(t *testing.T) {
	page := func(n int, format func(i int) string) []byte {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(`<a href="` + format(i) + `">x</a>`)
		}
		return []byte(b.String())
	}
	distinct := page(30, func(i int) string { return fmt.Sprintf("/x%d", i) })
	res, err := Extract(distinct, "http://example.com/", nil, Options{MaxLinks: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != 10 || res.Truncated != 20 || res.Found != 30 {
		t.Errorf("links %d truncated %d found %d", len(res.Links), res.Truncated, res.Found)
	}
	// The cap counts distinct URLs, fragments removed: page#1..page#100
	// are one, and every sighting of a URL within the cap is a link.
	anchors := page(100, func(i int) string { return fmt.Sprintf("/p#%d", i) })
	res, _ = Extract(append(anchors, distinct...), "http://example.com/", nil, Options{MaxLinks: 10})
	if len(res.Links) != 109 || res.Truncated != 21 || res.Found != 130 || res.Links[108].URL != "http://example.com/x8" {
		t.Errorf("anchors: links %d truncated %d found %d", len(res.Links), res.Truncated, res.Found)
	}
	// Invalid candidates count against the store bound, not the cap.
	junk := page(200, func(i int) string { return fmt.Sprintf("mailto:x%d", i) })
	res, _ = Extract(append(junk, distinct...), "http://example.com/", nil, Options{MaxLinks: 10})
	if len(res.Links) != 0 || res.Found != 230 || res.DroppedTotal != 104 || res.Dropped[urlnorm.ReasonScheme] != 104 || res.Truncated != 126 {
		t.Errorf("store bound: links %d found %d dropped %d truncated %d", len(res.Links), res.Found, res.DroppedTotal, res.Truncated)
	}
	// Repeated invalid references count once each in Dropped, by reason.
	res, _ = Extract(page(50, func(i int) string { return "mailto:x" }), "http://example.com/", nil, Options{MaxLinks: 10})
	if res.Dropped[urlnorm.ReasonScheme] != 50 || res.Truncated != 0 {
		t.Errorf("repeated invalid: dropped %v truncated %d", res.Dropped, res.Truncated)
	}
	// Sightings are bounded too (8×MaxLinks+64).
	res, _ = Extract(page(200, func(i int) string { return "/same" }), "http://example.com/", nil, Options{MaxLinks: 10})
	if len(res.Links) != 144 || res.Truncated != 56 {
		t.Errorf("sightings bound: links %d truncated %d", len(res.Links), res.Truncated)
	}
	res, _ = Extract(distinct, "http://example.com/", nil, Options{MaxLinks: -1})
	if len(res.Links) != 30 || res.Truncated != 0 {
		t.Errorf("no cap: links %d truncated %d", len(res.Links), res.Truncated)
	}
	// A cap too large for 8×cap+64 bounds nothing: its bounds wrapped to
	// 64, 64 and 56, and a page of 200 distinct links kept 64 or fewer.
	many := page(200, func(i int) string { return fmt.Sprintf("/y%d", i) })
	for _, c := range []int{1 << 61, 1 << 62, math.MaxInt} {
		res, _ = Extract(many, "http://example.com/", nil, Options{MaxLinks: c})
		if len(res.Links) != 200 || res.Truncated != 0 {
			t.Errorf("cap %d: links %d truncated %d", c, len(res.Links), res.Truncated)
		}
	}
}

// TestReferencePage: a manual on one page links a few thousand pages,
// each many times with anchors; the default cap keeps every one of them.
func TestReferencePage(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 30000; i++ {
		fmt.Fprintf(&b, `<a href="p%d.html#sec%d">x</a>`, i%3000, i)
	}
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, `<a href="/other/%d.html">x</a>`, i)
	}
	res, err := Extract([]byte(b.String()), "http://example.com/doc/index.html", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range res.Links {
		seen[l.URL] = true
	}
	if len(seen) != 8000 || len(res.Links) != 35000 || res.Truncated != 0 || !seen["http://example.com/other/4999.html"] || !seen["http://example.com/doc/p2999.html"] {
		t.Errorf("%d distinct URLs in %d links, truncated %d; want 8000 in 35000", len(seen), len(res.Links), res.Truncated)
	}
}

func TestBrokenHTML(t *testing.T) {
	for _, page := range []string{
		`<a href="/one"`,
		`<a href='/one'><<<<>>>><a href=/two`,
		`<script>document.write('<a href="/not">')</script><a href="/one">`,
		`<!-- <a href="/not"> --><a href="/one">`,
		"<a href=\"/one\x00\">",
		`<textarea><a href="/not"></textarea><a href="/one">`,
	} {
		if _, err := Extract([]byte(page), "http://example.com/", nil, Options{}); err != nil {
			t.Errorf("%q: %v", page, err)
		}
	}
	res, _ := Extract([]byte(`<noscript/><a href="/ns">`), "http://example.com/", nil, Options{})
	if got := urls(res.Links); !reflect.DeepEqual(got, []string{"http://example.com/ns"}) {
		t.Errorf("<noscript/> content: %q", got)
	}
	res, _ = Extract([]byte(`<script>document.write('<a href="/not">')</script><!-- <a href="/not"> --><a href="/one">`), "http://example.com/", nil, Options{})
	if got := urls(res.Links); !reflect.DeepEqual(got, []string{"http://example.com/one"}) {
		t.Errorf("script/comment content read as links: %q", got)
	}
}

func TestBadPageURL(t *testing.T) {
	if _, err := Extract(nil, "not a url", nil, Options{}); err == nil {
		t.Error("no error for a relative page URL")
	}
}

func TestRefreshURL(t *testing.T) {
	for in, want := range map[string]string{
		"5; url=/a":        "/a",
		"5;URL = '/a b' x": "/a b",
		"0, /b":            "/b",
		"3.5 ; url=\"/c\"": "/c",
		"5":                "",
		"x; url=/a":        "",
		"5; urlish":        "urlish",
		"5 url=/d":         "/d",
		".5;url=/e":        "/e",
		"5;   ":            "",
	} {
		u, ok := refreshURL([]byte(in))
		if string(u) != want || ok != (want != "") {
			t.Errorf("refreshURL(%q) = %q, %v; want %q", in, u, ok, want)
		}
	}
}

func TestSrcset(t *testing.T) {
	for in, want := range map[string][]string{
		"a.png 1x, b.png 2x":             {"a.png", "b.png"},
		"a.png,b.png":                    {"a.png,b.png"},
		"a.png, b.png":                   {"a.png", "b.png"},
		"a.png 100w (max-width: 1,2), c": {"a.png", "c"},
		" , ,,":                          nil,
		"data:image/png;base64,AAA= 1x":  {"data:image/png;base64,AAA="},
	} {
		var got []string
		forEachSrcsetURL([]byte(in), func(u []byte) { got = append(got, string(u)) })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("srcset %q: %q, want %q", in, got, want)
		}
	}
}

func TestLinkHeader(t *testing.T) {
	type lv struct{ u, rel string }
	for in, want := range map[string][]lv{
		`</a>; rel="next"`:                         {{"/a", "next"}},
		`</a>; rel="Next Prev", </b>;rel=up`:       {{"/a", "next prev"}, {"/b", "up"}},
		`</a>; title="x, y"; rel=next, </b>`:       {{"/a", "next"}, {"/b", ""}},
		`garbage, </c>; junk junk, </d>; rel=last`: {{"/c", ""}, {"/d", "last"}},
		`<unterminated`:                            nil,
	} {
		var got []lv
		forEachLinkHeader(in, func(u []byte, rel string) { got = append(got, lv{string(u), rel}) })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Link %q: %q, want %q", in, got, want)
		}
	}
}
