package robots

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/jimsmart/grobotstxt"
)

// The differential test against Google's parser (see the package doc and
// testdata/google-differences.md). A disagreement is explained by a cause
// when switching on that one Google behaviour (a dialect knob) in this
// package makes it agree; a disagreement no single cause explains fails the
// test.

// googleCause is one documented RFC 9309 vs Google difference.
type googleCause struct {
	name  string
	d     dialect
	limit int // parse limit under this cause (-1: DefaultMaxSize)
}

var googleCauses = []googleCause{
	{"percent-encoding", dialect{rawPercent: true}, -1},
	{"index.html", dialect{indexHTML: true}, -1},
	{"size-limit", dialect{}, 0},
	{"line-length", dialect{maxLine: googleMaxLine}, -1},
	{"robots.txt-implicit", dialect{noRobotsTx: true}, -1},
	{"agent-token", dialect{tokenChars: true}, -1},
	{"grobotstxt-hex-bug", dialect{rawPercent: true, hexBug: true}, -1},
}

// googleMaxLine is where Google's parser cuts a line (2083*8-1 octets).
const googleMaxLine = 2083*8 - 1

// classify names the cause of a disagreement: the first single cause that
// explains it, else the first pair ("a+b"), else "" (unexplained).
func classify(body []byte, agent, path string, want bool, cache map[string]*File) string {
	try := func(c googleCause) bool {
		key := fmt.Sprint(c.d, c.limit)
		f := cache[key]
		if f == nil {
			limit := c.limit
			if limit < 0 {
				limit = DefaultMaxSize
			}
			f = parse(body, limit, c.d)
			cache[key] = f
		}
		return f.Rules(agent).Allowed(path) == want
	}
	for _, c := range googleCauses {
		if try(c) {
			return c.name
		}
	}
	for i, a := range googleCauses {
		for _, b := range googleCauses[i+1:] {
			if try(combine(a, b)) {
				return a.name + "+" + b.name
			}
		}
	}
	return ""
}

// combine switches on the Google behaviours of both causes.
func combine(a, b googleCause) googleCause {
	d := a.d
	d.rawPercent = d.rawPercent || b.d.rawPercent
	d.indexHTML = d.indexHTML || b.d.indexHTML
	d.maxLine = max(d.maxLine, b.d.maxLine)
	d.noRobotsTx = d.noRobotsTx || b.d.noRobotsTx
	d.tokenChars = d.tokenChars || b.d.tokenChars
	d.hexBug = d.hexBug || b.d.hexBug
	limit := a.limit
	if b.limit == 0 {
		limit = 0
	}
	return googleCause{a.name + "+" + b.name, d, limit}
}

type diffStats struct {
	files, queries, agree, oracleSkipped int
	causes                               map[string]int
	unexplained                          []string
}

// diffFile compares decisions on one file for sampled agents and paths.
func diffFile(t testing.TB, name string, body []byte, st *diffStats, pathsPerFile int) {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := newRand(h.Sum64())
	mine := Parse(body)
	agents := []string{"KSpider"}
	if as := mine.Agents(); len(as) > 0 {
		a := as[rng.IntN(len(as))]
		// A crawler's own token is letters, '-' and '_' (RFC 9309 2.2.1).
		if a != "*" && a != "" && a != "kspider" && ProductToken(a) == a {
			agents = append(agents, a)
		}
	}
	paths := samplePaths(rng, body, pathsPerFile)
	text := string(body)
	var dialects map[string]*File
	st.files++
	for _, agent := range agents {
		rules := mine.Rules(agent)
		for _, p := range paths {
			u, err := url.Parse("http://example.com" + p)
			if err != nil {
				st.oracleSkipped++ // Google's library refuses what url.Parse refuses
				continue
			}
			uri := u.String()
			path := PathOf(uri)
			st.queries++
			got := rules.Allowed(path)
			want := grobotstxt.AgentAllowed(text, agent, uri)
			if got == want {
				st.agree++
				continue
			}
			if dialects == nil {
				dialects = map[string]*File{}
			}
			cause := classify(body, agent, path, want, dialects)
			if cause == "" {
				st.unexplained = append(st.unexplained, fmt.Sprintf("%s: agent %q path %q: kspider allowed=%v, google allowed=%v", name, agent, path, got, want))
				continue
			}
			st.causes[cause]++
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 20261121)) }

// samplePaths returns up to n paths built from the file's own rules (with
// wildcards filled in, and variants around each) plus a few common ones.
func samplePaths(rng *rand.Rand, body []byte, n int) []string {
	var values []string
	for _, line := range strings.FieldsFunc(string(body), func(r rune) bool { return r == '\n' || r == '\r' }) {
		k, v, ok := splitRecord(line)
		if !ok || v == "" {
			continue
		}
		if kind := parseKey(k); kind == keyAllow || kind == keyDisallow {
			values = append(values, v)
		}
	}
	out := []string{"/", "/robots.txt", "/index.html"}
	fills := []string{"", "x", "a/b", "%41", "ü", "?q=1", "/index.html", "-"}
	for tries := 0; len(out) < n && len(values) > 0 && tries < 4*n; tries++ {
		v := values[rng.IntN(len(values))]
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			switch {
			case v[i] == '*':
				b.WriteString(fills[rng.IntN(len(fills))])
			case v[i] == '$' && i == len(v)-1:
			default:
				b.WriteByte(v[i])
			}
		}
		p := b.String()
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		switch rng.IntN(7) {
		case 0:
			p += "x"
		case 1:
			p += "/"
		case 2:
			if len(p) > 1 {
				p = p[:len(p)-1]
			}
		case 3:
			p += "?a=b"
		case 4: // escape one unreserved character
			if i := strings.IndexAny(p, "abcdefghijklmnopqrstuvwxyz0123456789-._~"); i >= 0 {
				p = fmt.Sprintf("%s%%%02x%s", p[:i], p[i], p[i+1:])
			}
		case 5:
			p = strings.ToLower(p)
		}
		out = append(out, p)
	}
	return out
}

func runDiff(t *testing.T, keep func(int) bool, pathsPerFile int) *diffStats {
	st := &diffStats{causes: map[string]int{}}
	eachCorpusFile(t, keep, func(f corpusFile) {
		diffFile(t, f.name, f.body, st, pathsPerFile)
	})
	causes := make([]string, 0, len(st.causes))
	for c, n := range st.causes {
		causes = append(causes, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(causes)
	t.Logf("%d files, %d queries: %d agree, %d explained disagreements (%s), %d unexplained; %d paths url.Parse refused",
		st.files, st.queries, st.agree, st.queries-st.agree-len(st.unexplained), strings.Join(causes, " "), len(st.unexplained), st.oracleSkipped)
	for i, u := range st.unexplained {
		if i == 30 {
			t.Errorf("... and %d more", len(st.unexplained)-i)
			break
		}
		t.Errorf("unexplained disagreement: %s", u)
	}
	return st
}

// TestGoogleDifferential compares with Google's parser on a deterministic
// sample of the corpus (every 25th file, about 2,000). Set
// KSPIDER_ROBOTS_FULL=1 for the whole corpus (minutes).
func TestGoogleDifferential(t *testing.T) {
	keep := func(i int) bool { return i%25 == 0 }
	if os.Getenv("KSPIDER_ROBOTS_FULL") == "1" {
		keep = nil
	}
	runDiff(t, keep, 12)
}
