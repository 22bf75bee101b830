package spider

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
)

// TestNodeScopeNarrowed: a crawl stopped part way, and run again with a
// host excluded (scope.exclude: the site asked not to be crawled). The
// URLs of that host already queued were fetched all the same: the scope
// applied only to links found. Now they are dropped unfetched (counted
// rejected), and the crawl ends. Then run with the host admitted again.
func TestNodeScopeNarrowed(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	if _, err := runNodeUntil(t, cfg, 60); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want it interrupted", err)
	}
	before := storedURLs(t, dir)
	host := mostQueuedHost(t, dir, before)
	t.Logf("excluding %s", host)
	name := strings.TrimPrefix(host, "https:")
	sc := scopeNone()
	sc.Exclude = []string{"^https?://" + regexp.QuoteMeta(name) + "/"}
	cfg.Scope = &sc
	sum, err := runNode(t, t.Context(), cfg)
	if err != nil || !sum.Finished {
		t.Fatalf("run with the host excluded: %+v, %v", sum, err)
	}
	if sum.Rejected == 0 {
		t.Errorf("run with the host excluded: %+v, want its queued URLs counted rejected", *sum)
	}
	for u := range storedURLs(t, dir) {
		if hostKey(u) == host && !before[u] {
			t.Errorf("%s fetched after its host was excluded", u)
		}
	}

	// The scope widened again (the exclusion dropped): the host's URLs
	// dropped unfetched, and the links to it refused, were never seen
	// again, and the run "finished" at once without them; now the crawl
	// is the web's truth.
	wide := scopeNone()
	cfg.Scope = &wide
	if sum, err = runNode(t, t.Context(), cfg); err != nil || !sum.Finished {
		t.Fatalf("run with the scope widened again: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, depth))
}

// mostQueuedHost is the host with the most URLs in dir's tree not in
// stored (queued, most of them).
func mostQueuedHost(t *testing.T, dir string, before map[string]bool) string {
	t.Helper()
	// The host with the most URLs known but not stored (queued, most of
	// them).
	tree, err := urltree.Open(dir+"/urls", &urltree.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	queued := map[string]int{}
	for id := uint32(0); int(id) < tree.Len(); id++ {
		u, err := tree.Get(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !before[string(u)] {
			queued[hostKey(string(u))]++
		}
	}
	tree.Close()
	host, most := "", 0
	for h, n := range queued {
		if n > most {
			host, most = h, n
		}
	}
	if most == 0 {
		t.Fatal("nothing queued after the first run")
	}
	return host
}

// TestNodeLinksCapRaised: a crawl finished with limits.max_links_per_page
// 2, run again with the cap lifted. The links beyond the old cap had been
// dropped and their pages were done: the second run "finished" at once
// without them. Now it follows the stored pages' links again, and the
// store is the web's truth.
func TestNodeLinksCapRaised(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	cfg.MaxLinks = 2
	sum, err := runNode(t, t.Context(), cfg)
	if err != nil || !sum.Finished {
		t.Fatalf("run with 2 links a page: %+v, %v", sum, err)
	}
	truth := truthURLs(t, srv, depth)
	if got := len(storedURLs(t, dir)); got >= len(truth) {
		t.Fatalf("run with 2 links a page stored %d pages, the web has %d: the cap cut nothing", got, len(truth))
	}
	cfg.MaxLinks = 0
	if sum, err = runNode(t, t.Context(), cfg); err != nil || !sum.Finished {
		t.Fatalf("run with the cap lifted: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, dir), truth)
}

// TestScopeDigest: the digest DIR/SCOPE keeps changes with what decides
// which links are followed, and not with a list set empty rather than
// left out ("exclude = []"), which made a pass over the whole store.
func TestScopeDigest(t *testing.T) {
	base := scopeNone()
	d := scopeDigest(base, 100)
	empty := base
	empty.Include, empty.Exclude, empty.Domains = []string{}, []string{}, []string{}
	if scopeDigest(empty, 100) != d {
		t.Error("empty lists change the digest")
	}
	other := base
	other.Exclude = []string{"^https://a\\.example/"}
	budget := base
	budget.MaxPagesPerHost++
	for name, got := range map[string]string{"exclude": scopeDigest(other, 100), "per-host budget": scopeDigest(budget, 100), "links cap": scopeDigest(base, 101)} {
		if got == d {
			t.Errorf("the %s changed, the digest did not", name)
		}
	}
}
