package urlnorm

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/tools/testenv"
)

// whatwgCase is one test object of urltestdata.json.
type whatwgCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Failure  bool    `json:"failure"`
	Protocol string  `json:"protocol"`
	Username string  `json:"username"`
	Password string  `json:"password"`
	Hostname string  `json:"hostname"`
	Host     string  `json:"host"`
	Port     string  `json:"port"`
	Pathname string  `json:"pathname"`
	Search   string  `json:"search"`
	Hash     string  `json:"hash"`
}

func loadWHATWG(t testing.TB) []whatwgCase {
	path := testenv.Data(t, dataset.URLTestData)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	var cases []whatwgCase
	for _, it := range items {
		if len(it) > 0 && it[0] == '"' {
			continue // a comment
		}
		var c whatwgCase
		if err := json.Unmarshal(it, &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

// loadExceptions reads testdata/whatwg-exceptions.txt: one case per line,
// the input as a JSON string, a tab, the base as a JSON string, a tab and
// the reason.
func loadExceptions(t testing.TB) map[[2]string]string {
	f, err := os.Open("testdata/whatwg-exceptions.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ex := map[[2]string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			t.Fatalf("exceptions: line %q is not input<TAB>base<TAB>reason", line)
		}
		var in, base string
		if err := json.Unmarshal([]byte(parts[0]), &in); err != nil {
			t.Fatalf("exceptions: input of %q: %v", line, err)
		}
		if err := json.Unmarshal([]byte(parts[1]), &base); err != nil {
			t.Fatalf("exceptions: base of %q: %v", line, err)
		}
		ex[[2]string{in, base}] = parts[2]
	}
	return ex
}

// httpCase reports whether a case is in the conformance scope the issue
// sets: its base or its expected result is http or https.
func (c whatwgCase) httpCase() bool {
	isHTTP := func(s string) bool {
		s = strings.ToLower(strings.TrimLeft(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "))
		return strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:")
	}
	if c.Base != nil && isHTTP(*c.Base) {
		return true
	}
	if !c.Failure && isHTTP(c.Href) {
		return true
	}
	return c.Failure && isHTTP(c.Input)
}

// run parses one case and returns the href, or ok false on failure.
func (c whatwgCase) run() (*URL, error) {
	var base *URL
	if c.Base != nil {
		b, err := Parse(*c.Base)
		if err != nil {
			return nil, err
		}
		base = b
	}
	return ParseRef(base, c.Input)
}

func (c whatwgCase) check(u *URL, err error) string {
	if c.Failure {
		if err == nil {
			return "want failure, got " + u.Href()
		}
		return ""
	}
	if err != nil {
		return "want " + c.Href + ", got " + err.Error()
	}
	var bad []string
	for _, f := range []struct{ name, got, want string }{
		{"href", u.Href(), c.Href},
		{"protocol", u.Scheme() + ":", c.Protocol},
		{"username", u.Username(), c.Username},
		{"password", u.Password(), c.Password},
		{"hostname", u.Hostname(), c.Hostname},
		{"host", u.Host(), c.Host},
		{"port", u.Port(), c.Port},
		{"pathname", u.Pathname(), c.Pathname},
		{"search", u.Search(), c.Search},
		{"hash", u.Hash(), c.Hash},
	} {
		if f.got != f.want {
			bad = append(bad, f.name+": got "+f.got+", want "+f.want)
		}
	}
	return strings.Join(bad, "; ")
}

func TestWHATWGConformance(t *testing.T) {
	cases := loadWHATWG(t)
	ex := loadExceptions(t)
	used := map[[2]string]bool{}
	inScope, excepted, passedAll := 0, 0, 0
	for _, c := range cases {
		base := ""
		if c.Base != nil {
			base = *c.Base
		}
		key := [2]string{c.Input, base}
		u, err := c.run()
		msg := c.check(u, err)
		if msg == "" {
			passedAll++
		}
		if !c.httpCase() {
			continue
		}
		inScope++
		if reason, ok := ex[key]; ok {
			used[key] = true
			excepted++
			if msg == "" {
				t.Errorf("%q against %q passes but is listed as an exception (%s)", c.Input, base, reason)
			}
			continue
		}
		if msg != "" {
			t.Errorf("%q against %q: %s", c.Input, base, msg)
		}
	}
	for k := range ex {
		if !used[k] {
			t.Errorf("exception %q against %q matches no http(s) case", k[0], k[1])
		}
	}
	t.Logf("http(s) cases: %d, exceptions: %d (%.2f%%); all %d cases: %d pass", inScope, excepted, 100*float64(excepted)/float64(inScope), len(cases), passedAll)
	if excepted*100 > inScope {
		t.Errorf("%d exceptions is more than 1%% of %d cases", excepted, inScope)
	}
}

// TestNetURLConformance measures, for the README, how many in-scope cases
// Go's net/url alone resolves to the expected href.
func TestNetURLConformance(t *testing.T) {
	cases := loadWHATWG(t)
	inScope, pass := 0, 0
	for _, c := range cases {
		if !c.httpCase() {
			continue
		}
		inScope++
		var got string
		var err error
		if c.Base != nil {
			var b *url.URL
			if b, err = url.Parse(*c.Base); err == nil {
				var r *url.URL
				if r, err = url.Parse(c.Input); err == nil {
					got = b.ResolveReference(r).String()
				}
			}
		} else {
			var r *url.URL
			if r, err = url.Parse(c.Input); err == nil {
				got = r.String()
			}
		}
		if c.Failure && err != nil || !c.Failure && err == nil && got == c.Href {
			pass++
		}
	}
	t.Logf("net/url: %d of %d http(s) cases right (%.1f%%)", pass, inScope, 100*float64(pass)/float64(inScope))
}
