package links

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/testenv"
	"golang.org/x/net/html"
)

// oracleTags is the extractor's former reading of a body: upstream's
// tokenizer, every start and self-closing tag's raw bytes, and
// NextIsNotRawText after noscript and noframes.
func oracleTags(body []byte) [][]byte {
	z := html.NewTokenizer(bytes.NewReader(body))
	var tags [][]byte
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tags
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := z.Raw()
			tags = append(tags, bytes.Clone(raw))
			if el, _ := elementName(raw[1:nameEnd(raw, 1)]); el == "noscript" || el == "noframes" {
				z.NextIsNotRawText()
			}
		}
	}
}

// scannerTags is the same through scanner, as Extractor.scan uses it.
func scannerTags(body []byte) [][]byte {
	z := scanner{s: body, all: true}
	var tags [][]byte
	var t tag
	for {
		raw, _, _, ok := z.next(&t)
		if !ok {
			return tags
		}
		tags = append(tags, raw)
	}
}

func compareTags(t testing.TB, name string, body []byte) {
	want, got := oracleTags(body), scannerTags(body)
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g []byte
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if !bytes.Equal(w, g) {
			t.Fatalf("%s: start tag %d of %d: tokenizer %q, scanner %q (of %d)", name, i, len(want), clip(w), clip(g), len(got))
		}
	}
	compareWanted(t, name, body, want)
}

// compareWanted checks the scanner as the extractor runs it: the tags of
// interest only, in the oracle's order, with the attributes that readRaw
// reads from each tag alone.
func compareWanted(t testing.TB, name string, body []byte, all [][]byte) {
	var want [][]byte
	for _, raw := range all {
		if el, _ := elementName(raw[1:nameEnd(raw, 1)]); el != "" && el != "noscript" && el != "noframes" {
			want = append(want, raw)
		}
	}
	z := scanner{s: body}
	var got, alone tag
	for i := 0; ; i++ {
		raw, _, clean, ok := z.next(&got)
		if !ok {
			if i != len(want) {
				t.Fatalf("%s: %d tags of interest, scanner %d", name, len(want), i)
			}
			return
		}
		if i >= len(want) || !bytes.Equal(raw, want[i]) {
			t.Fatalf("%s: tag of interest %d: scanner %q", name, i, clip(raw))
		}
		if aloneClean := alone.readRaw(raw); aloneClean != clean || clean && !equalTags(&got, &alone) {
			t.Fatalf("%s: tag %q: in the page %+v (clean %v), alone %+v (clean %v)", name, clip(raw), got, clean, alone, aloneClean)
		}
	}
}

func clip(b []byte) []byte {
	if len(b) > 100 {
		return b[:100]
	}
	return b
}

// scanSamples are the tokenizer's corner cases that decide where tags
// begin and end.
var scanSamples = []string{
	"",
	"plain text, no tags",
	"<a href=x>y</a>",
	"<A HREF=x Href=y hReF='z'>dup</A>",
	"<a href='>' title=\">\">x</a><a href=y>",
	"<a =x href=y><a ==x href=z><a = href=w>",
	"<a href = x ><a href= 'y' ><a href =\"z\"/><a href=/>",
	"<a/href=x><a/ href=y><a href/=z>",
	"<script>if (a < b && c > d) { x = '</scr' + 'ipt>' }</script><a href=after>",
	"<script><!-- document.write('<script>x</script>') --></script><a href=after>",
	"<script><!--<script></script>--></script><a href=1><script><!--<script>--></script><a href=2>",
	"<script><!-- <SCRIPT >x</SCRIPT> --></script ><a href=3><script><!-- a --></scriptx></script/><a href=4>",
	"<script><!--- --!> <a href=in></script><a href=5><script><!-<a href=6></script><a href=7>",
	"<style>a < b { }</style><textarea><a href=no></textarea><title>x < y</title>",
	"<title></tit</title><a href=t><TITLE>x</TITLE\t><a href=u><xmp><a href=no></xmp><a href=v>",
	"<iframe src=i><a href=no></iframe><noembed><a href=no></noembed ><a href=w>",
	"<!-- <a href=commented> --><!--> <!---> <!-- -- --!><a href=ok>",
	"<!-- --!-> <a href=c> --><!-- -!> <a href=d> --!><a href=e><!--!--><a href=f>",
	"<!DOCTYPE html><![CDATA[ <a href=cdata> ]]><?php echo 1 ?><a href=x>",
	"<!doctype><!DOCTYP><!><!-><!--><a href=g>",
	"<noscript><a href=ns></noscript><noframes><a href=nf></noframes>",
	"<NoScript><a href=ns2></noscript><NOFRAMES/><a href=nf2>",
	"text < not a tag <3 <> </> </ x> <a\x00b href=nul>\x00",
	"</a href='>'><a href=h></a x=\"></a>\"><a href=i>",
	"<<a href=j><</a><a<b href=k>",
	"<a href=\"unterminated",
	"<a href=x",
	"<a href=x ",
	"<a",
	"<",
	"<!",
	"<!-",
	"<!--",
	"</",
	"<plaintext><a href=never>",
	"<img src=a srcset='b 1x, c 2x' / ><br/><a href=x/>",
	"<svg><a xlink:href=s></a></svg><math><mi>x</mi></math>",
	"<a href=x\r\ny>\r\n</a>\f<a\fhref=y\f>",
	"<br x=1 x=y/><br x=a/><br X=a x=b/><br x=b/ y><br a x=a/ X=/>",
	"<scripts><a href=l><textareax><a href=m><script/><a href=no></script><a href=n>",
	"<style><!-- </style> --><a href=o>",
}

func TestScannerSameTags(t *testing.T) {
	for i, s := range scanSamples {
		compareTags(t, fmt.Sprintf("sample %d", i), []byte(s))
		// Every cut of every sample: where the body ends decides
		// whether the last tag is one.
		for n := range len(s) {
			compareTags(t, fmt.Sprintf("sample %d cut at %d", i, n), []byte(s[:n]))
		}
	}
	all := strings.Join(scanSamples, "")
	compareTags(t, "all samples", []byte(all))
	for _, h := range hostiles {
		compareTags(t, h.name, []byte(h.page(4<<10)))
	}
}

// TestScannerPieces compares the scanner with the tokenizer on many
// short documents made of the pieces that move its states (script
// escapes, raw text end tags, comments, quotes), drawn with a fixed seed.
func TestScannerPieces(t *testing.T) {
	alphabets := [][]string{{
		"<script>", "</script>", "<SCRIPT ", "</scrip", "<script/", "<!--", "-->", "--!>", "-", "--",
		"<", "/", ">", "!", "a", " ", "<a href=x>", "<title>", "</title>", "</TITLE ", "<style>",
		"</style", "<noscript>", "<!", "<?", "</", "='", "\"", "'", "<a title='", "<img src=\"y\">",
	}, {
		// readScript's states only, behind one "<script>".
		"<script>", "</script>", "<!--", "-", ">", "<", "/", "a", "<a href=x>",
	}}
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if raceEnabled || testing.Short() {
		n = 2000
	}
	var b strings.Builder
	for _, pieces := range alphabets {
		for i := 0; i < n; i++ {
			b.Reset()
			b.WriteString(pieces[0])
			for k := r.IntN(16); k >= 0; k-- {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			compareTags(t, fmt.Sprintf("pieces %q", b.String()), []byte(b.String()))
		}
	}
}

// TestScannerRealPages compares the scanner with the tokenizer on every
// page of the corpora that the real-page benchmark reads, when installed
// (every 4th with the race detector, the first 50 of each with -short).
func TestScannerRealPages(t *testing.T) {
	pages, missing := 0, []string(nil)
	for _, name := range corpusNames {
		corpus := loadCorpus(t, name)
		if len(corpus) == 0 {
			missing = append(missing, name)
		}
		for i, p := range corpus {
			if testing.Short() && i >= 50 {
				break
			}
			if raceEnabled && i%4 != 0 {
				continue
			}
			compareTags(t, p.url, p.body)
			pages++
		}
	}
	if len(missing) > 0 {
		// make test installs the Debian doc packages (tools/testdeps.sh).
		if testenv.RequireServers() {
			t.Errorf("corpora not installed: %v", missing)
		} else {
			t.Logf("corpora not installed, not compared: %v", missing)
		}
	}
	t.Logf("%d pages, the same start tags", pages)
}

func FuzzScannerSameTags(f *testing.F) {
	for _, s := range scanSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		compareTags(t, "fuzz", body)
	})
}
