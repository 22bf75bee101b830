package htmltok

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/net/html"
)

// compare runs upstream's tokenizer and this one over the same input and
// fails at the first token that differs in type or raw bytes. After a
// noscript or noframes start tag both are told NextIsNotRawText, as the
// extractor does.
func compare(t testing.TB, name string, up, ours io.Reader) {
	zu, zo := html.NewTokenizer(up), NewTokenizer(ours)
	for i := 0; ; i++ {
		tu, to := zu.Next(), zo.Next()
		ru, ro := zu.Raw(), zo.Raw()
		if tu != to || !bytes.Equal(ru, ro) {
			t.Fatalf("%s: token %d: upstream %v %q, htmltok %v %q", name, i, tu, trim(ru), to, trim(ro))
		}
		if tu == html.ErrorToken {
			if zu.Err() != zo.Err() {
				t.Fatalf("%s: upstream ends with %v, htmltok with %v", name, zu.Err(), zo.Err())
			}
			return
		}
		if tu == html.StartTagToken {
			if n, _ := zu.TagName(); string(n) == "noscript" || string(n) == "noframes" {
				zu.NextIsNotRawText()
				zo.NextIsNotRawText()
			}
		}
	}
}

func trim(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// compareAll compares a document whole and through reads of one byte and
// of half the asked size, which make the tokenizers refill mid-token.
func compareAll(t testing.TB, name string, doc []byte) {
	compare(t, name, bytes.NewReader(doc), bytes.NewReader(doc))
	compare(t, name+" (1-byte reads)", bytes.NewReader(doc), iotest.OneByteReader(bytes.NewReader(doc)))
	compare(t, name+" (half reads)", iotest.HalfReader(bytes.NewReader(doc)), iotest.HalfReader(bytes.NewReader(doc)))
}

var samples = []string{
	"",
	"plain text, no tags",
	"<a href=x>y</a>",
	"<A HREF=x Href=y hReF='z'>dup</A>",
	"<div " + strings.Repeat("a=1 ", 40) + "A=2 " + strings.Repeat("b=2 ", 3) + ">many attributes</div>",
	"<p x=1 y=2 x=3 " + strings.Repeat("k", 20) + "=4 " + strings.Repeat("K", 20) + "=5>",
	"<script>if (a < b && c > d) { x = '</scr' + 'ipt>' }</script><a href=after>",
	"<style>a < b { }</style><textarea><a href=no></textarea><title>x < y</title>",
	"<!-- <a href=commented> --><!--> <!---> <!-- -- --!><a href=ok>",
	"<!DOCTYPE html><![CDATA[ <a href=cdata> ]]><?php echo 1 ?><a href=x>",
	"<noscript><a href=ns></noscript><noframes><a href=nf></noframes>",
	"text < not a tag <3 <> </> </ x> <a\x00b href=nul>\x00",
	"<a href=\"unterminated",
	"<plaintext><a href=never>",
	"<img src=a srcset='b 1x, c 2x' / ><br/><a href=x/>",
	"<svg><a xlink:href=s></a></svg><math><mi>x</mi></math>",
	"<a href=x\r\ny>\r\n</a>",
	// Self-closing or not depends on the last attribute kept, so on
	// duplicate removal.
	"<br x=1 x=y/><br x=a/><br X=a x=b/><br x=b/ y><br a x=a/ X=/>",
	"<br " + strings.Repeat("a=1 ", 20) + "z=1 A=x/>",
	manyDistinct(), // past attrScanMax: the map path
}

// manyDistinct is a tag with 20 distinct attributes, then a repeat of the
// first in upper case ending the tag self-closing or not by that repeat.
func manyDistinct() string {
	var b strings.Builder
	b.WriteString("<br ")
	for i := range 20 {
		b.WriteString("a" + string(rune('a'+i)) + "=1 ")
	}
	b.WriteString("AA=x/><br AA=y/>")
	return b.String()
}

func TestSameTokens(t *testing.T) {
	for i, s := range samples {
		compareAll(t, "sample "+string(rune('a'+i)), []byte(s))
	}
	// Real pages, when the documentation package the benchmarks use is
	// installed (make test installs it).
	files, _ := filepath.Glob("/usr/share/doc/postgresql-doc-15/html/*.html")
	if testing.Short() && len(files) > 50 {
		files = files[:50]
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, f, bytes.NewReader(doc), bytes.NewReader(doc))
	}
	if len(files) > 0 {
		doc, _ := os.ReadFile(files[0])
		compareAll(t, files[0], doc)
	}
}

func FuzzSameTokens(f *testing.F) {
	for _, s := range samples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		compareAll(t, "fuzz", doc)
	})
}

// upstreamVersion is the golang.org/x/net release token.go was copied from.
const upstreamVersion = "v0.62.0"

// TestUpstreamVersion fails when go.mod moves golang.org/x/net, so that an
// upgrade (which may carry tokenizer fixes, security ones included) is
// also carried into this copy.
func TestUpstreamVersion(t *testing.T) {
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "golang.org/x/net" {
			if f[1] != upstreamVersion {
				t.Fatalf("go.mod requires golang.org/x/net %s; htmltok/token.go is a copy of %s's html/token.go: "+
					"diff upstream's html/token.go between the two versions, carry the changes into token.go, "+
					"then set upstreamVersion", f[1], upstreamVersion)
			}
			return
		}
	}
	t.Fatal("go.mod does not require golang.org/x/net")
}
