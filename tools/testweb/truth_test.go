package testweb

import (
	"testing"
)

func TestTruthReachability(t *testing.T) {
	w := Generate(Config{Hosts: 50, Seed: 6, MaxPages: 100, Plain: true})
	tr := w.Truth(testPorts)
	seeds := tr.Reachable(0, 0)
	if len(seeds) != len(tr.Seeds()) || len(seeds) == 0 {
		t.Fatalf("depth 0: %d docs for %d seeds", len(seeds), len(tr.Seeds()))
	}
	all := tr.Reachable(10, 0)
	byURL := map[string]Doc{}
	var bytes int64
	for _, d := range all {
		if _, dup := byURL[d.URL]; dup {
			t.Fatalf("%s listed twice", d.URL)
		}
		byURL[d.URL] = d
		bytes += d.Bytes
	}
	for _, h := range w.SeedHosts() {
		for i := 0; i < h.Pages; i++ {
			u := origin(h, h.Name, testPorts) + escapeTarget(pagePath(h, i))
			d, ok := byURL[u]
			if !ok {
				t.Fatalf("page %d of seed host %s (%s) not reachable within depth 10", i, h.Name, u)
			}
			if d.Kind != "page" || d.Status != 200 {
				t.Errorf("%s: %+v", u, d)
			}
		}
	}
	for _, d := range all {
		for _, l := range d.Links {
			ld, ok := byURL[l]
			if d.Depth < 10 && !ok {
				t.Fatalf("%s (depth %d) links to %s, not in the reachable set", d.URL, d.Depth, l)
			}
			if ok && ld.Depth > d.Depth+1 {
				t.Fatalf("%s at depth %d, linked from depth %d", l, ld.Depth, d.Depth)
			}
		}
	}
	crawl := tr.Crawlable("kspider", 10, 0)
	if len(crawl) >= len(all) {
		t.Errorf("robots.txt excluded nothing: %d of %d", len(crawl), len(all))
	}
	for _, d := range crawl {
		if !tr.Allowed("kspider", d.URL) {
			t.Errorf("crawlable but disallowed: %s", d.URL)
		}
		if _, ok := byURL[d.URL]; !ok {
			t.Errorf("crawlable but not reachable: %s", d.URL)
		}
	}
	if got := tr.Reachable(10, 100); len(got) > 100 {
		t.Errorf("limit 100: %d docs", len(got))
	}
	t.Logf("reachable %d URLs, %d bytes; crawlable by kspider %d; pages in web %d", len(all), bytes, len(crawl), tr.PageCount())
}

func TestTruthTrapsBounded(t *testing.T) {
	w := Generate(Config{Hosts: 200, Seed: 1, MaxPages: 100})
	tr := w.Truth(testPorts)
	docs := tr.Reachable(6, 20000)
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[d.Kind]++
	}
	for _, k := range []string{"page", "resource", "redirect", "error", "trap"} {
		if kinds[k] == 0 {
			t.Errorf("no %s reachable within depth 6: %v", k, kinds)
		}
	}
	t.Logf("%d docs: %v", len(docs), kinds)
}

func TestAgentFor(t *testing.T) {
	w := Generate(Config{Hosts: 50, Seed: 1})
	for _, h := range w.Hosts() {
		if h.Robots != RobotsAgents {
			continue
		}
		for ua, want := range map[string]string{
			"Mozilla/5.0 (compatible; kspider/1.0; +http://x.invalid/)": "kspider",
			"KSpider/2":     "kspider",
			"curl/8.0":      "curl",
			"Googlebot/2.1": "googlebot",
			"":              "",
		} {
			if got := h.agentFor(ua); got != want {
				t.Errorf("agentFor(%q) = %q, want %q", ua, got, want)
			}
		}
		tr := w.Truth(testPorts)
		u := origin(h, h.Name, testPorts) + "/"
		if !tr.Allowed("kspider", u) || tr.Allowed("curl", u) {
			t.Errorf("%s: kspider should be allowed on /, others not", h.Name)
		}
		return
	}
	t.Fatal("no agents host")
}
