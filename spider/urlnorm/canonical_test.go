package urlnorm

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/tools/testenv"
)

func mustParse(t testing.TB, s string) *URL {
	t.Helper()
	u, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCanonical(t *testing.T) {
	base := mustParse(t, "http://example.com/dir/page.html?q=1#top")
	for _, tc := range []struct {
		in, want string
		opts     Options
	}{
		{in: "HTTP://User:Pass@EXAMPLE.COM:80/a/./b/../c#frag", want: "http://example.com/a/c"},
		{in: "https://example.com:443", want: "https://example.com/"},
		{in: "https://example.com:8443/", want: "https://example.com:8443/"},
		{in: "other.html", want: "http://example.com/dir/other.html"},
		{in: "#x", want: "http://example.com/dir/page.html?q=1"},
		{in: "", want: "http://example.com/dir/page.html?q=1"},
		{in: "?", want: "http://example.com/dir/page.html"},
		{in: "/%7e%41%2f%2F%3a%zz%25?%7e=%26%3d", want: "http://example.com/~A%2F%2F%3A%zz%25?~=%26%3D"},
		{in: "/a b/ü?x y", want: "http://example.com/a%20b/%C3%BC?x%20y"},
		{in: "http://Bücher.example/", want: "http://xn--bcher-kva.example/"},
		{in: "http://0x7F.0.0.1/", want: "http://127.0.0.1/"},
		{in: "http://[0:0:0:0:0:0:0:1]:8080/", want: "http://[::1]:8080/"},
		{in: "\\\\other.example\\x", want: "http://other.example/x"},
		// The trailing dot names the same DNS name: one host, not two
		// crawled in full and their server asked twice as often.
		{in: "http://Example.COM./a", want: "http://example.com/a"},
		{in: "https://example.com..:8443/", want: "https://example.com:8443/"},
		{in: "http://bücher.example./", want: "http://xn--bcher-kva.example/"},
		{in: "http://127.0.0.1./", want: "http://127.0.0.1/"},
		{in: "http://./x", want: "http://./x"},
		{in: "http://foo.09../", want: "http://foo.09../"}, // "foo.09" is an invalid IPv4 address
		{in: "/a;jsessionid=ABC123/b;jsessionid=1?PHPSESSID=x&a=1&SID=2&sessionid=3&ASPSESSIONIDQQ=4&b=2",
			want: "http://example.com/a/b?a=1&b=2", opts: Options{StripSessionIDs: true}},
		{in: "/a;jsessionid=ABC?PHPSESSID=x", want: "http://example.com/a;jsessionid=ABC?PHPSESSID=x"},
		{in: "/?sid=1", want: "http://example.com/", opts: Options{StripSessionIDs: true}},
		// A segment the strip would leave "." or ".." keeps its id: as a
		// dot segment it would be removed on the next parse.
		{in: "/.;jsessionid=1", want: "http://example.com/.;jsessionid=1", opts: Options{StripSessionIDs: true}},
		{in: "/a/..;jsessionid=1;jsessionid=2/b;jsessionid=3", want: "http://example.com/a/..;jsessionid=1;jsessionid=2/b", opts: Options{StripSessionIDs: true}},
		{in: "/a/...;jsessionid=1/.b;jsessionid=2", want: "http://example.com/a/.../.b", opts: Options{StripSessionIDs: true}},
		{in: "/?b=2&a=1&c=3&a=0", want: "http://example.com/?a=1&a=0&b=2&c=3", opts: Options{SortQuery: true}},
		{in: "/?b=2&&a=1", want: "http://example.com/?a=1&b=2", opts: Options{SortQuery: true}},
		{in: "/?a=1&b=2", want: "http://example.com/?a=1&b=2", opts: Options{SortQuery: true}},
		{in: "/?a=1&&b=2&", want: "http://example.com/?a=1&b=2", opts: Options{SortQuery: true}},
		{in: "/?&", want: "http://example.com/", opts: Options{SortQuery: true}},
	} {
		got, err := Canonical(base, tc.in, &tc.opts)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q, %+v) = %q, %v; want %q", tc.in, tc.opts, got, err, tc.want)
		}
	}
}

func TestCanonicalDrops(t *testing.T) {
	base := mustParse(t, "https://example.com/")
	for in, want := range map[string]Reason{
		"mailto:x@example.com":      ReasonScheme,
		"javascript:void(0)":        ReasonScheme,
		"ftp://example.com/":        ReasonScheme,
		"data:text/html,hi":         ReasonScheme,
		"file:///etc/passwd":        ReasonScheme,
		"http://[::1":               ReasonInvalid,
		"http://exa mple.com/":      ReasonInvalid,
		"http://:80/":               ReasonInvalid,
		"http://256.256.256.256/":   ReasonInvalid,
		"http://example.com:99999/": ReasonInvalid,
		"http://xn--.com/":          ReasonInvalid,
		"http://a.XN--。com/":        ReasonInvalid,
	} {
		dst := []byte("keep")
		out, err := AppendCanonical(dst, base, in, nil)
		var e *Error
		if !errors.As(err, &e) || e.Reason != want {
			t.Errorf("%q: error %v, want reason %v", in, err, want)
		}
		if string(out) != "keep" {
			t.Errorf("%q: dst changed to %q on error", in, out)
		}
	}
	if _, err := Canonical(nil, "/relative", nil); err == nil {
		t.Error("relative reference without base: no error")
	}
	long := "http://example.com/" + strings.Repeat("a", 100)
	var e *Error
	if _, err := Canonical(nil, long, &Options{MaxLength: 50}); !errors.As(err, &e) || e.Reason != ReasonTooLong {
		t.Errorf("long URL: %v", err)
	}
}

// TestCanonicalOneStringOneResource checks both rules of the canonical
// form on random references built from pieces that are easy to confuse.
// The reference identity of a URL is computed independently: the WHATWG
// href without fragment, credentials and the host's trailing dots, read as
// a sequence of octets where an escape of an unreserved character is that
// character and any other escape is kept as an escape (in upper case), and
// a bare "?" at the end does not count. Two references with the same identity must give the
// same canonical string (one resource, one string) and two with different
// identities different strings (one string, one resource).
func TestCanonicalOneStringOneResource(t *testing.T) {
	pieces := []string{"a", "A", "%41", "%61", "%2F", "%2f", "/", "?", "&", "=", "%3D", "%3d", "%25", "%",
		"~", "%7E", "%7e", ";", ".", "..", "%2e", "%2E", "#", "%23", " ", "%20", "+", "%2B", "ü", "%C3%BC", "\\", "%5C", "|", "%7C"}
	base := mustParse(t, "http://example.com/x/y")
	rng := rand.New(rand.NewPCG(1, 2))
	byCanon := map[string]string{}
	byIdentity := map[string]string{}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		b.WriteString("/")
		for n := rng.IntN(5); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		ref := b.String()
		c, err := Canonical(base, ref, nil)
		u, err2 := ParseRef(base, ref)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%q: canonical error %v, parse error %v", ref, err, err2)
		}
		if err != nil {
			continue // "/\\%" is a host, and an invalid one
		}
		id := identity(u)
		if prev, ok := byCanon[c]; ok && prev != id {
			t.Fatalf("canonical %q stands for two resources: %q and %q", c, prev, id)
		}
		byCanon[c] = id
		// The other rule is best effort next to a bare "%": "%%41" keeps its
		// escape so as not to read as "%A" (see normalizeEscapes).
		if prev, ok := byIdentity[id]; ok && prev != c && !hasBarePercent(c) && !hasBarePercent(prev) {
			t.Fatalf("resource %q has two canonical strings: %q and %q", id, prev, c)
		}
		byIdentity[id] = c
		if again, err := Canonical(nil, c, nil); err != nil || again != c {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", ref, c, again, err)
		}
	}
}

// TestInvalidUTF8Bytes: a byte that is not UTF-8 (a TIS-620 or
// windows-1252 page read undecoded) was encoded as U+FFFD, so /ก.html and
// /ข.html of a TIS-620 page (bytes A1 and A2) were one URL naming neither.
func TestInvalidUTF8Bytes(t *testing.T) {
	base := mustParse(t, "http://example.com/d/")
	for in, want := range map[string]string{
		"/\xa1.html":             "http://example.com/%A1.html",
		"/\xa2.html":             "http://example.com/%A2.html",
		"\xa1?q=\xa2\xe9":        "http://example.com/d/%A1?q=%A2%E9",
		"/caf\xe9/é":             "http://example.com/caf%E9/%C3%A9",
		"/\xe0\xb8/\xe0\xb8\x81": "http://example.com/%E0%B8/%E0%B8%81",
		"/%A1":                   "http://example.com/%A1",
		"/\xff\xfe":              "http://example.com/%FF%FE",
	} {
		got, err := Canonical(base, in, nil)
		if err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
		if again, err := Canonical(nil, got, nil); err != nil || again != got {
			t.Errorf("not idempotent: %q -> %q -> %q (%v)", in, got, again, err)
		}
	}
}

func identity(u *URL) string {
	host := u.Hostname()
	// A host's trailing dots name the DNS root: "a." is the name "a"
	// resolves to (but dots alone, or a number left last, stay).
	if h := strings.TrimRight(host, "."); h != "" && !endsInNumber([]byte(h)) {
		host = h
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	s := u.Scheme() + "://" + host + u.Pathname()
	if q := u.Query(); q != "" {
		s += "?" + q
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, ok := hexByte(s[i+1], s[i+2]); ok {
				if isUnreserved(v) {
					b.WriteByte(v)
				} else {
					b.WriteString("%" + strings.ToUpper(s[i+1:i+3]))
				}
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasBarePercent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if _, ok := hexByte(s[min(i+1, len(s)-1)], s[min(i+2, len(s)-1)]); !ok || i+2 >= len(s) {
				return true
			}
		}
	}
	return false
}

func hexByte(a, b byte) (byte, bool) {
	hi, ok1 := unhex(a)
	lo, ok2 := unhex(b)
	return hi<<4 | lo, ok1 && ok2
}

// TestCanonicalRealURLs runs a sample of real URLs through the canonical
// form: no panic, and canonical(canonical(x)) == canonical(x).
func TestCanonicalRealURLs(t *testing.T) {
	path := testenv.Data(t, dataset.URLsWeb)
	limit := 50000
	if testing.Short() {
		limit = 5000
	}
	ok, failed := 0, 0
	opts := []*Options{nil, {StripSessionIDs: true, SortQuery: true}}
	_, err := dataset.Lines(path, limit, func(line []byte) error {
		for _, o := range opts {
			c, err := Canonical(nil, string(line), o)
			if err != nil {
				failed++
				continue
			}
			ok++
			if again, err := Canonical(nil, c, o); err != nil || again != c {
				t.Errorf("not idempotent: %q -> %q -> %q (%v)", line, c, again, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d canonical, %d rejected", ok, failed)
}

func TestFileURLs(t *testing.T) {
	base := mustParse(t, "file:///tmp/mock/path")
	httpBase := mustParse(t, "http://www.example.com/test")
	for _, tc := range []struct {
		base     *URL
		in, want string
	}{
		{base, "file:c:\\foo\\bar.html", "file:///c:/foo/bar.html"},
		{base, "  File:c|////foo\\bar.html", "file:///c:////foo/bar.html"},
		{base, "C|/foo/bar", "file:///C:/foo/bar"},
		{base, "/C|\\foo\\bar", "file:///C:/foo/bar"},
		{base, "//C|/foo/bar", "file:///C:/foo/bar"},
		{base, "//server/file", "file://server/file"},
		{base, "\\\\server\\file", "file://server/file"},
		{base, "/\\server/file", "file://server/file"},
		{base, "file:///foo/bar.txt", "file:///foo/bar.txt"},
		{base, "//", "file:///"},
		{base, "///test", "file:///test"},
		{base, "file://test", "file://test/"},
		{base, "file://localhost", "file:///"},
		{base, "file://localhost/test", "file:///test"},
		{base, "test", "file:///tmp/mock/test"},
		{base, "file:test", "file:///tmp/mock/test"},
		{base, "?x", "file:///tmp/mock/path?x"},
		{httpBase, "file:...", "file:///..."},
		{httpBase, "file:..", "file:///"},
		{httpBase, "file:a", "file:///a"},
		{mustParse(t, "file:///C:/a/b"), "/x", "file:///C:/x"},
		{nil, "file://example.net/C:/", "file://example.net/C:/"},
		{nil, "file://[1::8]/C:/", "file://[1::8]/C:/"},
		{nil, "file://localhost//a//../..//", "file://///"},
		{nil, "file://\\/localhost//cat", "file:////localhost//cat"},
		{nil, "file:///Y:", "file:///Y:"},
		{nil, "file:C|/m/", "file:///C:/m/"},
		{nil, "file:", "file:///"},
		{nil, "file:?q=v", "file:///?q=v"},
		{nil, "file:#frag", "file:///#frag"},
		{mustParse(t, "file://host/dir/file"), "C|", "file://host/C:"},
		{mustParse(t, "file://host/"), "/C:/", "file://host/C:/"},
		{mustParse(t, "file:///C:/a"), "file:", "file:///C:/a"},
		{mustParse(t, "file:///C:/a/b"), "../../..", "file:///C:/"},
	} {
		u, err := ParseRef(tc.base, tc.in)
		if err != nil || u.Href() != tc.want {
			b := "<nil>"
			if tc.base != nil {
				b = tc.base.Href()
			}
			t.Errorf("%q against %q: %v, %v; want %q", tc.in, b, u, err, tc.want)
		}
	}
}
