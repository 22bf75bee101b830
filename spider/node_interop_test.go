package spider

import (
	"bytes"
	"context"
	"errors"
	"html"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/scope"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/testenv"
	"github.com/kspider/kspider/tools/testweb"
)

// TestNodeNginxDocs is the interoperability test: a node crawls each
// Debian documentation package tools/testweb/nginx.sh serves (one host name
// each, real nginx on loopback, names from its dnsmasq) and must
// store every HTML page reachable from the package's index, byte-identical
// to the file on disk. What is reachable is worked out here from the files
// alone, with a small scanner of its own rather than kspider's extractor, so
// the two parsers check each other.
func TestNodeNginxDocs(t *testing.T) {
	ng, err := testweb.StartNginx(context.Background(), testweb.NginxOptions{
		NginxBin:    testenv.Binary(t, "nginx", "nginx-light"),
		DnsmasqBin:  testenv.Binary(t, "dnsmasq", "dnsmasq-base"),
		HostsPerDoc: 1})
	if errors.Is(err, testweb.ErrNoDocs) && !testenv.RequireServers() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ng.Stop(); err != nil {
			t.Error(err)
		}
	})
	res, err := resolver.New(resolver.Config{Servers: []string{ng.DNSAddr}, Timeout: time.Second, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
	for _, h := range ng.Hosts {
		t.Run(h.Name, func(t *testing.T) { crawlDocs(t, ng, h, lookup) })
	}
}

// crawlDocs crawls one package's host to the end with its own node and
// checks the store against the files.
func crawlDocs(t *testing.T, ng *testweb.Nginx, h testweb.NginxHost, lookup LookupFunc) {
	// Under the race detector the 270 MB of javadoc take minutes of CPU:
	// there its crawl and truth stop at depth 1 (72 pages), which checks
	// the node's depth limit as well.
	maxDepth := scope.MaxLimit
	if raceDetector && strings.Contains(h.Root, "openjdk") {
		maxDepth = 1
	}
	// The truth is worked out while the node crawls.
	var truth map[string]string // URL path → file
	truthDone := make(chan struct{})
	go func() {
		defer close(truthDone)
		truth = reachableDocs(h.Name, ng.Port, h.Root, maxDepth)
	}()

	dir := t.TempDir()
	// The docs link to the real web: the scope is the host, HTML pages and
	// directories only (the resources are not what is checked).
	sc := scope.Default()
	sc.Include = []string{`^http://` + regexp.QuoteMeta(h.Name) + `:` + strconv.Itoa(ng.Port) + `(/[^?#]*)?(\.html|/)(\?[^#]*)?$`}
	cfg := NodeConfig{
		Dir: dir, Seeds: []string{"http://" + h.Name + ":" + strconv.Itoa(ng.Port) + "/"}, MaxDepth: maxDepth, Scope: &sc,
		Lookup: lookup,
		Collector: collector.Config{Fetchers: 16, ConnectTimeout: 5 * time.Second, FirstByte: 5 * time.Second,
			ResponseTimeout: 10 * time.Second},
		Scheduler:    scheduler.Config{PartialWait: 20 * time.Millisecond, ErrorDelay: 500 * time.Millisecond, Columns: 101},
		SyncInterval: 20 * time.Millisecond,
		Logf:         t.Logf,
	}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum, runErr := n.Run(ctx)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	<-truthDone
	if runErr != nil {
		t.Fatal(runErr)
	}
	t.Logf("%+v", *sum)
	t.Logf("%d HTML pages reachable from / within depth %d in %s", len(truth), maxDepth, h.Root)
	if !sum.Finished {
		t.Error("the crawl did not finish by itself")
	}

	// Every stored 200 page of a reachable path must be the file, byte for
	// byte, once decoded of its content coding as `kspider get` readers do.
	r, err := storage.OpenReader([]string{filepath.Join(dir, "pages")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stored := map[string]int{} // URL path → times stored
	var bad []string
	if err := r.Scan(context.Background(), func(p *storage.Page) error {
		u, err := url.Parse(p.URL)
		if err != nil {
			t.Errorf("stored URL %q: %v", p.URL, err)
			return nil
		}
		file, ok := truth[u.Path]
		if !ok || p.Status != 200 || u.Hostname() != h.Name {
			return nil
		}
		hdr, err := p.ParseHeader()
		if err != nil {
			t.Error(err)
			return nil
		}
		body, err := collector.DecodeBody(hdr.Get("Content-Encoding"), p.Body, maxReexpandBody)
		if err != nil {
			t.Errorf("%s: decoding the stored body: %v", p.URL, err)
			return nil
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Error(err)
			return nil
		}
		if !bytes.Equal(body, want) {
			bad = append(bad, p.URL)
		}
		stored[u.Path]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%d pages differ from their files, e.g. %v", len(bad), bad[:min(len(bad), 10)])
	}
	var missing []string
	for p := range truth {
		switch stored[p] {
		case 0:
			missing = append(missing, p)
		case 1:
		default:
			t.Errorf("http://%s%s stored %d times", h.Name, p, stored[p])
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d reachable HTML pages not stored, e.g. %v", len(missing), len(truth), missing[:min(len(missing), 10)])
	}
}

// reachableDocs walks the HTML files under root from seed's index the way
// nginx serves them: links (a and area href, frame and iframe src, after
// <base href>) to the seed's host whose path is an HTML file, or a directory
// with an index.html, under root, within maxDepth links of the index (a
// redirect would not count as a link, but there are none: links to a
// directory without its slash are left out). It returns URL path → file.
// It runs beside the crawl, so it reports nothing through t.
func reachableDocs(host string, port int, root string, maxDepth int) map[string]string {
	base := &url.URL{Scheme: "http", Host: host + ":" + strconv.Itoa(port), Path: "/"}
	found := map[string]string{}
	level, next := []*url.URL{base}, []*url.URL(nil)
	for d := 0; d <= maxDepth && len(level) > 0; d, level, next = d+1, next, nil {
		for _, u := range level {
			if p := reachableDoc(u, base, root, found); p != nil {
				next = append(next, p...)
			}
		}
	}
	return found
}

// reachableDoc adds u to found if it is an HTML page under root not found
// yet, and returns its links.
func reachableDoc(u, base *url.URL, root string, found map[string]string) []*url.URL {
	if u.Host != base.Host || u.Scheme != base.Scheme {
		return nil
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if _, ok := found[p]; ok {
		return nil
	}
	file := filepath.Join(root, filepath.FromSlash(path.Clean(p)))
	if st, err := os.Stat(file); err != nil {
		return nil
	} else if st.IsDir() {
		if !strings.HasSuffix(p, "/") { // nginx redirects to p+"/"
			return nil
		}
		file = filepath.Join(file, "index.html")
	} else if strings.HasSuffix(p, "/") {
		return nil
	}
	if !strings.HasSuffix(file, ".html") {
		return nil
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	found[p] = file
	page := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}
	var links []*url.URL
	for _, ref := range htmlRefs(body) {
		r, err := url.Parse(strings.TrimSpace(ref.href))
		if err != nil {
			continue
		}
		b := page
		if ref.base != "" {
			if bu, err := url.Parse(ref.base); err == nil {
				b = page.ResolveReference(bu)
			}
		}
		next := b.ResolveReference(r)
		next.Fragment, next.RawFragment = "", ""
		links = append(links, next)
	}
	return links
}

type htmlRef struct{ href, base string }

// htmlRefs lists the navigational references of an HTML document, each
// with the <base href> in force. It is a small scanner of its own, not
// spider/links (whose result it checks) nor a full tokenizer (too slow under
// -race for 270 MB of javadoc): tags a, area and base (href), frame and
// iframe (src); comments and script and style contents are skipped.
func htmlRefs(body []byte) []htmlRef {
	var refs []htmlRef
	var baseHref string
	for i := 0; ; {
		j := bytes.IndexByte(body[i:], '<')
		if j < 0 {
			return refs
		}
		i += j + 1
		if bytes.HasPrefix(body[i:], []byte("!--")) {
			k := bytes.Index(body[i+3:], []byte("-->"))
			if k < 0 {
				return refs
			}
			i += 3 + k + 3
			continue
		}
		n := 0
		for i+n < len(body) && isTagLetter(body[i+n]) {
			n++
		}
		name := strings.ToLower(string(body[i : i+n]))
		switch name {
		case "script", "style", "a", "area", "frame", "iframe", "base":
		default:
			continue // other tags' attributes are not read
		}
		attrs, end := tagAttrs(body, i+n)
		i = end
		switch name {
		case "script", "style":
			k := indexFold(body[i:], "</"+name)
			if k < 0 {
				return refs
			}
			i += k
		case "a", "area":
			if v, ok := attrs["href"]; ok {
				refs = append(refs, htmlRef{href: v, base: baseHref})
			}
		case "frame", "iframe":
			if v, ok := attrs["src"]; ok {
				refs = append(refs, htmlRef{href: v, base: baseHref})
			}
		case "base":
			if v, ok := attrs["href"]; ok && baseHref == "" {
				baseHref = v
			}
		}
	}
}

// indexFold is bytes.Index for an ASCII needle in lower or upper case.
func indexFold(b []byte, needle string) int {
	k, u := bytes.Index(b, []byte(needle)), bytes.Index(b, []byte(strings.ToUpper(needle)))
	if k < 0 || u >= 0 && u < k {
		return u
	}
	return k
}

func isTagLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// tagAttrs reads a start tag's attributes from body[i:] up to its '>',
// entity-decoding values; it returns them and the index after the tag.
func tagAttrs(body []byte, i int) (map[string]string, int) {
	attrs := map[string]string{}
	for i < len(body) {
		for i < len(body) && (isHTMLSpace(body[i]) || body[i] == '/') {
			i++
		}
		if i >= len(body) || body[i] == '>' {
			return attrs, i + 1
		}
		k := i
		for i < len(body) && !isHTMLSpace(body[i]) && body[i] != '=' && body[i] != '>' && body[i] != '/' {
			i++
		}
		key := strings.ToLower(string(body[k:i]))
		for i < len(body) && isHTMLSpace(body[i]) {
			i++
		}
		if i >= len(body) || body[i] != '=' {
			attrs[key] = ""
			continue
		}
		i++
		for i < len(body) && isHTMLSpace(body[i]) {
			i++
		}
		var val []byte
		if i < len(body) && (body[i] == '"' || body[i] == '\'') {
			q := body[i]
			e := bytes.IndexByte(body[i+1:], q)
			if e < 0 {
				return attrs, len(body)
			}
			val, i = body[i+1:i+1+e], i+1+e+1
		} else {
			k := i
			for i < len(body) && !isHTMLSpace(body[i]) && body[i] != '>' {
				i++
			}
			val = body[k:i]
		}
		if _, dup := attrs[key]; !dup { // the first of a repeated attribute counts
			attrs[key] = html.UnescapeString(string(val))
		}
	}
	return attrs, len(body)
}

func isHTMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
