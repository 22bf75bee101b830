package links

import (
	"bytes"
	"testing"

	"golang.org/x/net/html"
)

// FuzzRawTag checks that readRaw splits attributes exactly as the
// tokenizer's TagAttr does, whenever it does not defer to it.
func FuzzRawTag(f *testing.F) {
	for _, s := range []string{
		`<a href=x>`, `<a HREF="x" href='y' rel = nofollow>`, `<img =src=x src = "a b"/>`,
		`<a href=x/>`, `<a/href=x>`, `<a href="x>`, `<a href= >`, `<a href="a&amp;b">`,
		"<a\thref\n=\fx\rsrc='y'>", `<a href=>`, `<a href>`, `<a a=1 b c=2 href=3>`,
		`<a href="a&#x41;&#65&#0;&#128;&#x9f;&#xD800;&#1114112;&#99999999999;&#;&#x;&#">`,
		`<a href="&amp;&lt;&gt;&quot;&apos;&nbsp;&ampx&amp=&AMP;&;& &" src='&Amp;&amp'>`,
		`<img src="x?a=1&amp;b=2" srcset="&#x31;.png 1x, 2&#46;png 2x" lowsrc=&amp;>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		z := html.NewTokenizer(bytes.NewReader(data))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				return
			}
			if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			var fast, alone, slow tag
			raw := bytes.Clone(z.Raw())
			ok := fast.readRaw(raw)
			alone.readAttrs(raw)
			slow.fromTokenizer(z)
			if ok && !equalTags(&fast, &slow) {
				t.Fatalf("tag %q: raw %+v, tokenizer %+v", raw, fast, slow)
			}
			if !equalTags(&alone, &slow) {
				t.Fatalf("tag %q: tokenized alone %+v, in the page %+v", raw, alone, slow)
			}
		}
	})
}

func equalTags(a, b *tag) bool {
	if a.seen != b.seen {
		return false
	}
	for _, p := range [][2][]byte{{a.href, b.href}, {a.src, b.src}, {a.srcset, b.srcset}, {a.lowsrc, b.lowsrc},
		{a.lowres, b.lowres}, {a.data, b.data}, {a.cite, b.cite}, {a.poster, b.poster}, {a.rel, b.rel},
		{a.typ, b.typ}, {a.httpEquiv, b.httpEquiv}, {a.content, b.content}, {a.name, b.name}} {
		if !bytes.Equal(p[0], p[1]) {
			return false
		}
	}
	return true
}
