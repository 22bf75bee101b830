package urlnorm

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/kspider/kspider/tools/dataset"
)

// FuzzNormalize parses arbitrary references against arbitrary bases. None
// may panic; an http(s) href must parse back to itself, and the canonical
// form must be idempotent: canonical(canonical(x)) == canonical(x).
func FuzzNormalize(f *testing.F) {
	for _, s := range [][2]string{
		{"http://example.com/a/b?c#d", "../x?y#z"},
		{"https://example.com/", "//[::ffff:1.2.3.4]:0443/%2e%2E/./a%zz?%41=1#"},
		{"http://example.com/", "http://0x7f.1.0x0001/"},
		{"http://example.com/", "HTTP://ÜÑÎ.example:80\\a\\..\\b"},
		{"file:///C:/a", "..\\..\\d|/x"},
		{"sc://host/p", "/.//not-a-host/"},
		{"mailto:x", "#frag"},
		{"http://example.com/", "\t\n h\ttp://a.b/ \x00"},
		{"http://example.com/", "/;jsessionid=1?PHPSESSID=2&b=1&a=2"},
	} {
		f.Add(s[0], s[1])
	}
	// The WHATWG cases, when the shared data is there, are the seeds that
	// reach the parser's odd corners.
	if p, ok := dataset.Path(dataset.URLTestData); ok {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var cases []json.RawMessage
		if err := json.Unmarshal(data, &cases); err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		for _, it := range cases {
			var c whatwgCase
			if json.Unmarshal(it, &c) != nil {
				continue // a comment
			}
			base := ""
			if c.Base != nil {
				base = *c.Base
			}
			f.Add(base, c.Input)
		}
	}
	opts := &Options{StripSessionIDs: true, SortQuery: true}
	f.Fuzz(func(t *testing.T, baseStr, ref string) {
		base, err := Parse(baseStr)
		if err != nil {
			base = nil
		}
		u, err := ParseRef(base, ref)
		if err == nil {
			_ = u.Username() + u.Password() + u.Host() + u.Port() + u.Pathname() + u.Search() + u.Hash()
			if u.scheme == schemeHTTP || u.scheme == schemeHTTPS {
				again, err := Parse(u.Href())
				if err != nil || again.Href() != u.Href() {
					t.Fatalf("href %q of %q parses to %v, %v", u.Href(), ref, again, err)
				}
			}
		}
		for _, o := range []*Options{nil, opts} {
			c, err := Canonical(base, ref, o)
			if err != nil {
				continue
			}
			again, err := Canonical(nil, c, o)
			if err != nil || again != c {
				t.Fatalf("canonical of %q against %q: %q, then %q (%v)", ref, baseStr, c, again, err)
			}
		}
	})
}
