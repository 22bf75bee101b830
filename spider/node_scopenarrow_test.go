package spider

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/tools/testweb"
)

// passLine is what the node logs as it starts the pass over the store.
const passLine = "following the links of the stored pages again"

// TestNodeScopeOnlyNarrowed: a finished crawl run again with the scope
// only narrowed (an exclude added, the per-host budget and the links cap
// lowered). Every link the new scope keeps, the old one kept too, so the
// pass over the whole store (hours on a large one, before anything is
// fetched) adds nothing; it was made all the same. Now the narrowing is
// recorded at once, with no pass, and widening it back makes the pass.
// A directory whose SCOPE is of version 1 (the digest only) is read, and
// its file kept as version 2.
func TestNodeScopeOnlyNarrowed(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 12, MaxPages: 30, MeanPageSize: 2000, Seeds: 2, Plain: true}, &log)
	dir := t.TempDir()
	var mu sync.Mutex
	var lines strings.Builder
	cfg := nodeConfig(t, dir, srv, lookup, 2)
	cfg.Logf = func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&lines, f+"\n", a...)
		t.Logf(f, a...)
	}
	wide := scopeNone()
	wide.MaxPagesPerHost = 1000
	cfg.Scope, cfg.MaxLinks = &wide, 500
	run := func(what string) string {
		t.Helper()
		mu.Lock()
		lines.Reset()
		mu.Unlock()
		if sum, err := runNode(t, t.Context(), cfg); err != nil || !sum.Finished {
			t.Fatalf("%s: %+v, %v", what, sum, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return lines.String()
	}
	run("first run")

	narrow := wide
	narrow.Exclude = []string{`\.never\.example/`}
	narrow.MaxPagesPerHost = 500
	cfg.Scope, cfg.MaxLinks = &narrow, 100
	if out := run("run with the scope narrowed"); strings.Contains(out, passLine) {
		t.Errorf("the scope only narrowed, and the run made the pass over the store:\n%s", out)
	}
	if out := run("run with the same narrowed scope"); strings.Contains(out, passLine) {
		t.Errorf("the narrowed scope was not recorded: the next run made the pass:\n%s", out)
	}
	cfg.Scope, cfg.MaxLinks = &wide, 500
	if out := run("run with the scope widened again"); !strings.Contains(out, passLine) {
		t.Errorf("the scope widened again, and the run made no pass over the store:\n%s", out)
	}

	// Version 1, of this scope: no pass, and kept as version 2.
	path := filepath.Join(dir, ScopeFile)
	if err := os.WriteFile(path, encodeScopeDigest(scopeDigest(wide, 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("run on a version 1 SCOPE"); strings.Contains(out, passLine) {
		t.Errorf("SCOPE of version 1 with the run's scope, and the run made the pass:\n%s", out)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("kspider scope 2\n")) {
		t.Errorf("SCOPE after a run on version 1: %q, %v; want version 2", b, err)
	}
}

// TestScopeWithin: which changes only narrow a scope.
func TestScopeWithin(t *testing.T) {
	base := scopeOf(scope.Config{Include: []string{"a", "b"}, Exclude: []string{"x"}, Domains: []string{"example.org"},
		MaxURLLength: 100, MaxPathDepth: 10, MaxSegmentRepeat: 3, MaxPagesPerHost: 50, MaxSubdomains: 5}, 100)
	change := func(f func(*scopeRecord)) scopeRecord {
		r := base
		r.Scope.Include = append([]string(nil), base.Scope.Include...)
		r.Scope.Exclude = append([]string(nil), base.Scope.Exclude...)
		f(&r)
		return r
	}
	for name, c := range map[string]struct {
		r      scopeRecord
		narrow bool
	}{
		"same":                   {base, true},
		"include dropped one":    {change(func(r *scopeRecord) { r.Scope.Include = []string{"a"} }), true},
		"include added one":      {change(func(r *scopeRecord) { r.Scope.Include = append(r.Scope.Include, "c") }), false},
		"include emptied":        {change(func(r *scopeRecord) { r.Scope.Include = nil }), false},
		"exclude added":          {change(func(r *scopeRecord) { r.Scope.Exclude = append(r.Scope.Exclude, "y") }), true},
		"exclude dropped":        {change(func(r *scopeRecord) { r.Scope.Exclude = nil }), false},
		"domains changed":        {change(func(r *scopeRecord) { r.Scope.Domains = []string{"example.com"} }), false},
		"URL length lowered":     {change(func(r *scopeRecord) { r.Scope.MaxURLLength = 50 }), true},
		"URL length off":         {change(func(r *scopeRecord) { r.Scope.MaxURLLength = 0 }), false},
		"path depth raised":      {change(func(r *scopeRecord) { r.Scope.MaxPathDepth = 11 }), false},
		"repeats lowered":        {change(func(r *scopeRecord) { r.Scope.MaxSegmentRepeat = 2 }), true},
		"repeats off":            {change(func(r *scopeRecord) { r.Scope.MaxSegmentRepeat = 1 }), false},
		"queries refused":        {change(func(r *scopeRecord) { r.Scope.RejectQuery = true }), true},
		"CGI refused":            {change(func(r *scopeRecord) { r.Scope.RejectCGI = true }), true},
		"per-host budget down":   {change(func(r *scopeRecord) { r.Scope.MaxPagesPerHost = 10 }), true},
		"per-host budget off":    {change(func(r *scopeRecord) { r.Scope.MaxPagesPerHost = 0 }), false},
		"subdomains up":          {change(func(r *scopeRecord) { r.Scope.MaxSubdomains = 6 }), false},
		"links cap down":         {change(func(r *scopeRecord) { r.MaxLinks = 99 }), true},
		"links cap up":           {change(func(r *scopeRecord) { r.MaxLinks = 101 }), false},
		"links cap to default":   {change(func(r *scopeRecord) { r.MaxLinks = 0 }), false},
		"several, all narrowing": {change(func(r *scopeRecord) { r.Scope.Exclude = append(r.Scope.Exclude, "y"); r.MaxLinks = 5 }), true},
		"one of several widens":  {change(func(r *scopeRecord) { r.Scope.Exclude = append(r.Scope.Exclude, "y"); r.MaxLinks = 500 }), false},
	} {
		if got := c.r.within(base); got != c.narrow {
			t.Errorf("%s: within %v, want %v", name, got, c.narrow)
		}
	}
	none := scopeOf(scope.Config{}, 0)
	ruled := change(func(r *scopeRecord) { r.Scope.Domains = nil }) // (domain rules changed are taken as widening)
	if !ruled.within(none) || none.within(ruled) {
		t.Errorf("no rules at all: a scope with rules is within it %v (want true), it within one with rules %v (want false)", ruled.within(none), none.within(ruled))
	}
}

// TestScopeFileDamaged: DIR/SCOPE of either version with a byte changed at
// a random position, or cut short, is refused by name, never read as
// another scope.
func TestScopeFileDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ScopeFile)
	r := scopeOf(scope.Config{Exclude: []string{`^https://a\.example/`}, MaxPagesPerHost: 7}, 3)
	rng := rand.New(rand.NewPCG(4, 7))
	for _, good := range [][]byte{encodeScope(r), encodeScopeDigest(scopeDigest(r.Scope, r.MaxLinks))} {
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
		if d, _, err := readScope(dir); err != nil || d != scopeDigest(r.Scope, r.MaxLinks) {
			t.Fatalf("%q read as %s, %v", good, d, err)
		}
		for range 300 {
			b := bytes.Clone(good)
			if rng.IntN(4) == 0 {
				b = b[:rng.IntN(len(b))]
			} else {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			d, got, err := readScope(dir)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("SCOPE %q read as %s, %+v, %v; want it refused, by name", b, d, got, err)
			}
		}
	}
}

// TestDirFileVersionDamaged: a damaged version digit of IDENTITY or SCOPE
// is damage; only a file whose checksum holds is of a version this build
// does not know. The version was read before the checksum, so the digit
// damaged read as "a newer format: run the kspider that wrote it".
func TestDirFileVersionDamaged(t *testing.T) {
	resum := func(b []byte) []byte {
		i := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		return append(b[:i:i], dirFileSum(b[:i])...)
	}
	dir := t.TempDir()
	r := scopeOf(scope.Config{Exclude: []string{`^https://a\.example/`}}, 3)
	for _, tc := range []struct {
		name       string
		good       []byte
		from, to   string
		read       func() error
		newer, bad string
	}{
		{IdentityFile, DirIdentity{1, 3, "url"}.encode(), "directory 1", "directory 3",
			func() error { _, err := ReadDirIdentity(dir); return err }, "reads versions ≤ 1", "sum to"},
		{ScopeFile, encodeScope(r), "scope 2", "scope 3",
			func() error { _, _, err := readScope(dir); return err }, "reads versions 1 and 2", "is damaged"},
	} {
		damaged := bytes.Replace(tc.good, []byte(tc.from), []byte(tc.to), 1)
		for _, c := range []struct {
			b    []byte
			want string
		}{{damaged, tc.bad}, {resum(bytes.Clone(damaged)), tc.newer}} {
			if err := os.WriteFile(filepath.Join(dir, tc.name), c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			err := tc.read()
			if err == nil || !strings.Contains(err.Error(), c.want) || c.want == tc.bad && strings.Contains(err.Error(), "version") {
				t.Errorf("%s %q: %v; want an error saying %q", tc.name, c.b, err, c.want)
			}
		}
	}
}
