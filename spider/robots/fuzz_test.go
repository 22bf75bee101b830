package robots

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refMatch is Google's pattern matcher (a set of positions advanced per
// pattern byte), written independently of pattern.match as its oracle.
func refMatch(path, pat string) bool {
	pos := []int{0}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		if c == '$' && i == len(pat)-1 {
			return pos[len(pos)-1] == len(path)
		}
		var next []int
		if c == '*' {
			for j := pos[0]; j <= len(path); j++ {
				next = append(next, j)
			}
		} else {
			for _, p := range pos {
				if p < len(path) && path[p] == c {
					next = append(next, p+1)
				}
			}
		}
		if len(next) == 0 {
			return false
		}
		pos = next
	}
	return true
}

// refAllowed decides by brute force: every applicable rule, the highest
// priority wins, Allow on ties.
func refAllowed(f *File, agent, path string) bool {
	if path == "/robots.txt" {
		return true
	}
	path = string(appendNormal(nil, path, false))
	token := strings.ToLower(ProductToken(agent))
	var groups []group
	for _, want := range []string{token, "*"} {
		for _, g := range f.groups {
			for _, a := range g.agents {
				if a == want && want != "" {
					groups = append(groups, g)
					break
				}
			}
		}
		if len(groups) > 0 {
			break
		}
	}
	allow, disallow := 0, 0
	for _, g := range groups {
		for _, r := range g.rules {
			if r.pattern == "" || !refMatch(path, r.pattern) {
				continue
			}
			if r.allow {
				allow = max(allow, len(r.pattern))
			} else {
				disallow = max(disallow, len(r.pattern))
			}
		}
	}
	return disallow <= allow
}

func TestMatcherAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"/", "a", "b", "*", "$", "%61", "%2F", "?", "=", "ab", "/a", "/b"}
	word := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := 0; i < 3000; i++ {
		var body strings.Builder
		body.WriteString("user-agent: *\n")
		n := rng.IntN(12)
		if i%3 == 0 {
			n = literalIndexFrom + rng.IntN(100) // large sets get the literal index
		}
		for j := n; j >= 0; j-- {
			if rng.IntN(2) == 0 {
				body.WriteString("allow: ")
			} else {
				body.WriteString("disallow: ")
			}
			body.WriteString("/" + word(rng.IntN(5)) + "\n")
		}
		f := Parse([]byte(body.String()))
		r := f.Rules("x")
		for k := 0; k < 20; k++ {
			path := "/" + strings.ReplaceAll(strings.ReplaceAll(word(rng.IntN(6)), "*", "c"), "$", "d")
			if got, want := r.Allowed(path), refAllowed(f, "x", path); got != want {
				t.Fatalf("path %q: Allowed=%v, reference %v\n%s", path, got, want, body.String())
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(benchRobots), "/wp-admin/x", "KSpider")
	f.Add([]byte("\xEF\xBB\xBFuser-agent: *\r\ndisallow /a*b$\rallow: /a%62\n"), "/ab", "x")
	f.Add([]byte("User-agent: a\nUser-agent: b\nDisallow: /*.gif$\nCrawl-delay: 1e400\nSitemap: x"), "/x.gif", "b/1.0")
	f.Add([]byte("user-agent: *\ndisallow: /%zz%E3%83%84ü\x00\n"), "/%zz%e3%83%84", "*")
	f.Add([]byte("<html><body>Not found</body></html>"), "/", "")
	var many strings.Builder
	many.WriteString("user-agent: *\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&many, "disallow: /p/%d\nallow: /p/%d$\n", i, i*7)
	}
	many.WriteString("allow: /p/1*\n")
	f.Add([]byte(many.String()), "/p/14", "x")
	f.Fuzz(func(t *testing.T, body []byte, path, agent string) {
		file := ParseLimit(body, 1<<16)
		r := file.Rules(agent)
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		got := r.Allowed(path)
		if want := refAllowed(file, agent, path); got != want {
			t.Fatalf("path %q agent %q: Allowed=%v, reference %v", path, agent, got, want)
		}
		if !r.Allowed("/robots.txt") {
			t.Fatal("/robots.txt disallowed")
		}
		r.AllowedURL("http://h" + path)
		file.Agents()
		r.Len()
	})
}
