package testweb

import (
	"crypto/sha256"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

var testPorts = Ports{HTTP: 18080, HTTPS: 18443}

// sampleURLs returns up to n page URLs spread over the web's hosts.
func sampleURLs(w *Web, n int) []string {
	var out []string
	for _, h := range w.Hosts() {
		if h.Wildcard {
			continue
		}
		for _, i := range []int{0, 1, h.Pages / 2, h.Pages - 1} {
			out = append(out, origin(h, h.Name, testPorts)+escapeTarget(pagePath(h, i)))
		}
		if len(out) >= n {
			break
		}
	}
	return out
}

func renderURL(t *testing.T, w *Web, raw string) []byte {
	t.Helper()
	tr := w.Truth(testPorts)
	h, name, target, err := tr.split(raw)
	if err != nil {
		t.Fatal(err)
	}
	rt := routeOf(h, target)
	var scratch []byte
	return w.render(nil, w.pageOf(h, name, rt), testPorts, &scratch)
}

func webHash(t *testing.T, w *Web) string {
	sum := sha256.New()
	for _, u := range sampleURLs(w, 400) {
		sum.Write([]byte(u))
		sum.Write(renderURL(t, w, u))
	}
	for _, h := range w.Hosts() {
		fmt.Fprintln(sum, h.Name, h.Addr, h.Pages, h.Robots, h.Behaviour, h.DNS, h.Scheme)
	}
	return fmt.Sprintf("%x", sum.Sum(nil))
}

func TestSameSeedSameWeb(t *testing.T) {
	a := webHash(t, Generate(Config{Hosts: 300, Seed: 7}))
	b := webHash(t, Generate(Config{Hosts: 300, Seed: 7}))
	c := webHash(t, Generate(Config{Hosts: 300, Seed: 8}))
	if a != b {
		t.Fatalf("two generations with seed 7 differ: %s vs %s", a, b)
	}
	if a == c {
		t.Fatalf("seeds 7 and 8 give the same web")
	}
}

func TestWebShape(t *testing.T) {
	w := Generate(Config{Hosts: 2000, Seed: 1})
	suffixes := map[string]int{}
	idn, kinds, robots, dnsKinds := 0, map[Behaviour]int{}, map[RobotsKind]int{}, map[DNSKind]int{}
	maxPages, minPages := 0, 1<<30
	for _, h := range w.Hosts() {
		if strings.HasPrefix(h.Name, "xn--") || strings.Contains(h.Name, ".xn--") {
			idn++
			if h.Display == h.Name {
				t.Errorf("IDN host %s has no Unicode form", h.Name)
			}
		}
		suffixes[h.Name[strings.LastIndexByte(h.Name, '.')+1:]]++
		kinds[h.Behaviour]++
		robots[h.Robots]++
		dnsKinds[h.DNS]++
		if !h.Addr.IsLoopback() || !h.Addr.Is4() {
			t.Errorf("host %s has address %s", h.Name, h.Addr)
		}
		if !h.Wildcard {
			maxPages = max(maxPages, h.Pages)
			minPages = min(minPages, h.Pages)
		}
	}
	if idn == 0 {
		t.Error("no IDN hosts")
	}
	for _, s := range []string{"th", "com", "org", "net"} {
		if suffixes[s] == 0 {
			t.Errorf("no hosts under .%s", s)
		}
	}
	for _, b := range hostileBehaviours {
		if kinds[b] == 0 {
			t.Errorf("no host with behaviour %s", b)
		}
	}
	for _, k := range allRobotsKinds {
		if robots[k] == 0 {
			t.Errorf("no host with robots kind %s", k)
		}
	}
	for _, k := range []DNSKind{DNSCNAME, DNSServFail, DNSTimeout, DNSNXDomain} {
		if dnsKinds[k] == 0 {
			t.Errorf("no host with DNS kind %s", k)
		}
	}
	if maxPages < 10000 || minPages > 10 {
		t.Errorf("pages per host range %d..%d, want a few to tens of thousands", minPages, maxPages)
	}
	t.Logf("hosts 2000, pages %d, suffixes %v, idn %d, addresses %d", w.PageCount(), suffixes, idn, len(w.Addrs()))
}

// extractLinks is a reference link extractor: x/net/html tokens, <base>,
// net/url resolution, fragments dropped, http(s) only.
func extractLinks(t *testing.T, pageURL string, body []byte) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(pageURL)
	var out []string
	var walk func(n *html.Node)
	baseSeen := false
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if n.Data == "base" && a.Key == "href" && !baseSeen {
					baseSeen = true
					b, err := base.Parse(a.Val)
					if err == nil {
						base = b
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	var collect func(n *html.Node)
	collect = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if (a.Key == "href" && (n.Data == "a" || n.Data == "link")) || (a.Key == "src" && (n.Data == "img" || n.Data == "script")) {
					u, err := base.Parse(a.Val)
					if err != nil {
						t.Errorf("%s: bad link %q: %v", pageURL, a.Val, err)
						continue
					}
					if u.Scheme != "http" && u.Scheme != "https" {
						continue
					}
					u.Fragment = ""
					u.RawFragment = ""
					out = append(out, u.String())
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			collect(c)
		}
	}
	collect(doc)
	return out
}

func TestLinksInHTMLMatchTruth(t *testing.T) {
	w := Generate(Config{Hosts: 400, Seed: 3})
	tr := w.Truth(testPorts)
	urls := sampleURLs(w, 600)
	// Trap pages too.
	for _, h := range w.Hosts() {
		if e, ok := trapEntry(h, 0); ok && (h.Behaviour == BehaviourCalendar || h.Behaviour == BehaviourSymlink) {
			urls = append(urls, origin(h, h.Name, testPorts)+e)
		}
		if h.Wildcard {
			urls = append(urls, origin(h, "www."+h.Name, testPorts)+"/")
		}
	}
	links, bad := 0, 0
	for _, u := range urls {
		d, err := tr.Lookup(u)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != 200 || len(d.Links) == 0 {
			continue
		}
		body := renderURL(t, w, u)
		if int64(len(body)) != d.Bytes {
			t.Errorf("%s: rendered %d bytes, truth says %d", u, len(body), d.Bytes)
		}
		got := extractLinks(t, u, body)
		gotSet := map[string]bool{}
		for _, g := range got {
			gotSet[g] = true
		}
		want := append([]string(nil), d.Links...)
		var gs []string
		for g := range gotSet {
			gs = append(gs, g)
		}
		sort.Strings(gs)
		sort.Strings(want)
		if strings.Join(gs, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: links in HTML differ from truth\nhtml:\n%s\ntruth:\n%s\n\n%s", u, strings.Join(gs, "\n"), strings.Join(want, "\n"), body[:min(len(body), 6000)])
		}
		for _, l := range d.Links {
			links++
			ld, err := tr.Lookup(l)
			if err != nil {
				t.Fatalf("%s links to %s: %v", u, l, err)
			}
			if ld.Kind == "error" && ld.Status == 404 && !strings.Contains(l, "/status/") {
				bad++
				t.Errorf("%s links to %s, which is 404", u, l)
			}
		}
	}
	t.Logf("%d pages, %d links checked", len(urls), links)
}

func TestPageSizes(t *testing.T) {
	w := Generate(Config{Hosts: 200, Seed: 5})
	var total, n, big int64
	for _, h := range w.Hosts() {
		for i := 0; i < h.Pages && i < 200; i++ {
			s := w.pageSize(key(h.key, 20, uint64(i)))
			total += int64(s)
			n++
			if s > 100000 {
				big++
			}
			if s > maxPageSize || s < minPageSize {
				t.Fatalf("page size %d out of range", s)
			}
		}
	}
	mean := total / n
	if mean < 12000 || mean > 19000 {
		t.Errorf("mean page size %d, want about 15000", mean)
	}
	t.Logf("%d pages, mean %d bytes, %d over 100 KB", n, mean, big)
}
