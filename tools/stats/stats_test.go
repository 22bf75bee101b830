package stats

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/storage"
)

// hrefs is a stand-in link extractor: absolute href values only.
func hrefs() LinkFunc {
	re := regexp.MustCompile(`href="(https?://[^"]+)"`)
	return func(body []byte, pageURL string, header http.Header) ([]string, error) {
		var out []string
		for _, m := range re.FindAllSubmatch(body, -1) {
			out = append(out, string(m[1]))
		}
		return out, nil
	}
}

func page(id uint64, url string, status int, ip, header, body string) *storage.Page {
	p := &storage.Page{URLID: id, URL: url, Status: status, Header: []byte(header), Body: []byte(body),
		FetchTime: time.Unix(1e9, 0), Duration: time.Duration(id) * 30 * time.Millisecond}
	if ip != "" {
		p.ServerIP = netip.MustParseAddr(ip)
	}
	return p
}

const htmlHeader = "Server: Apache/1.3.9 (Unix)\r\nContent-Type: text/html; charset=TIS-620\r\n"

func testPages() []*storage.Page {
	return []*storage.Page{
		page(1, "http://www.ku.ac.th/", 200, "158.108.2.71", htmlHeader,
			`<a href="http://www.ku.ac.th/a.html">a</a><a href="http://www.ku.ac.th/a.html">again</a><a href="http://shop.co.th/">s</a><a href="http://example.com/x">x</a>`),
		page(2, "http://www.ku.ac.th/a.html", 200, "158.108.2.71", htmlHeader, "no links \xe0\xb8"),
		page(3, "http://cpe.ku.ac.th/index.php?x=1", 200, "158.108.2.72", "Server: Apache/2.4\r\nContent-Type: text/html\r\n",
			`<a href="http://www.ku.ac.th/">home</a>`),
		page(4, "http://shop.co.th/logo.GIF", 200, "203.150.1.1", "Server: Microsoft-IIS/4.0\r\nContent-Type: image/gif\r\n", "GIF89a"),
		page(5, "http://shop.co.th/missing", 404, "203.150.1.1", "Server: Microsoft-IIS/4.0\r\nContent-Type: text/html\r\n", "<p>not found</p>"),
		page(6, "http://bad.example.com/", 200, "", "this is not a header\r\n", "<html></html>"),
		page(7, "http://user.github.io/p.pdf", 200, "185.199.108.153", "Content-Type: application/pdf\r\n", "%PDF-1.4"),
	}
}

func collect(pages []*storage.Page, workers int, opts Options) *Report {
	opts.NewLinkFunc = hrefs
	c := New(opts)
	var wg sync.WaitGroup
	ch := make(chan *storage.Page)
	for range workers {
		wg.Go(func() {
			for p := range ch {
				c.Add(p)
			}
		})
	}
	for _, p := range pages {
		ch <- p
	}
	close(ch)
	wg.Wait()
	return c.Report()
}

func counts(rows []Count) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rows {
		m[r.Key] = r.Count
	}
	return m
}

func TestReport(t *testing.T) {
	r := collect(testPages(), 1, Options{StoredBytes: 100})
	want := Summary{URLs: 7, HTMLDocuments: 4, WebServers: 5, Machines: 4, Domains: 4, Links: 4}
	got := r.Summary
	got.BytesStored, got.HTMLBytes = 0, 0
	if got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	var raw, html int64
	for _, p := range testPages() {
		raw += int64(len(p.Header) + len(p.Body))
	}
	for _, id := range []int{0, 1, 2, 5} {
		html += int64(len(testPages()[id].Body))
	}
	if r.Summary.BytesStored != raw || r.Summary.HTMLBytes != html {
		t.Errorf("bytes %d html %d, want %d %d", r.Summary.BytesStored, r.Summary.HTMLBytes, raw, html)
	}
	check := func(name string, rows []Count, want map[string]int64) {
		t.Helper()
		got := counts(rows)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s[%q] = %d, want %d (all: %v)", name, k, got[k], v, rows)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	check("status", r.Status, map[string]int64{"200": 6, "404": 1})
	check("servers by software", r.ServersBySoftware, map[string]int64{"Apache": 2, "Microsoft-IIS": 1, keyNone: 2})
	check("pages by software", r.PagesBySoftware, map[string]int64{"Apache": 3, "Microsoft-IIS": 2, keyNone: 2})
	check("extensions", r.Extensions, map[string]int64{keyNone: 3, ".html": 1, ".php": 1, ".gif": 1, ".pdf": 1})
	check("content types", r.ContentTypes, map[string]int64{"text/html": 5, "image/gif": 1, "application/pdf": 1})
	check("charsets", r.Charsets, map[string]int64{"tis-620": 2, keyNone: 2})
	check("links per page", r.LinksPerPage, map[string]int64{"0": 2, "1-9": 2, "10-19": 0, "20-49": 0, "50-99": 0, "100-199": 0, "200-499": 0, "500+": 0})
	if r.Problems != (Problems{BadHeaders: 1, HTMLNotUTF8: 1}) {
		t.Errorf("problems %+v", r.Problems)
	}
	suffixes := map[string]DomainRow{}
	for _, row := range r.Suffixes {
		suffixes[row.Name] = row
	}
	wantSuffixes := map[string]DomainRow{
		"ac.th": {"ac.th", 2, 2, 3, 3},
		"co.th": {"co.th", 1, 1, 2, 0},
		"com":   {"com", 1, 0, 1, 1},
		"io":    {"io", 1, 1, 1, 0},
	}
	if len(suffixes) != len(wantSuffixes) {
		t.Errorf("suffixes %+v", r.Suffixes)
	}
	for k, v := range wantSuffixes {
		if suffixes[k] != v {
			t.Errorf("suffix %s: %+v, want %+v", k, suffixes[k], v)
		}
	}
	if top := r.TopDomainsByServers[0]; top != (DomainRow{"ku.ac.th", 2, 2, 3, 3}) {
		t.Errorf("top domain by servers %+v", top)
	}
	if top := r.TopDomainsByDocuments[0]; top.Name != "ku.ac.th" || r.TopDomainsByDocuments[1].Name != "example.com" {
		t.Errorf("top domains by documents %+v", r.TopDomainsByDocuments)
	}
	// Rows are suffixes by pages: ac.th, co.th, com, io.
	m := r.LinkMatrix
	if strings.Join(m.Names, " ") != "ac.th co.th com io" {
		t.Fatalf("matrix names %v", m.Names)
	}
	if m.Links[0][0] != 2 || m.Links[0][1] != 1 || m.Links[0][2] != 1 {
		t.Errorf("matrix %v", m.Links)
	}
	if r.Compression == nil || r.Compression.StoredBytes != 100 || r.Compression.RawBytes != raw {
		t.Errorf("compression %+v", r.Compression)
	}
}

// TestConcurrentAddIsDeterministic adds the pages from several goroutines in
// shuffled orders: the report must not change.
func TestConcurrentAddIsDeterministic(t *testing.T) {
	base := testPages()
	for i := range 200 {
		base = append(base, page(uint64(100+i), "http://h"+string(rune('a'+i%26))+".example.org/"+strings.Repeat("x", i%7)+".htm", 200+i%3, "10.0.0."+string(rune('1'+i%9)),
			"Server: S"+string(rune('a'+i%5))+"\r\nContent-Type: text/html\r\n", `<a href="http://x.go.th/">`))
	}
	var want []byte
	for round := range 5 {
		pages := append([]*storage.Page(nil), base...)
		rand.Shuffle(len(pages), func(i, j int) { pages[i], pages[j] = pages[j], pages[i] })
		var buf bytes.Buffer
		if err := collect(pages, 1+round, Options{Limit: 5}).WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			want = buf.Bytes()
		} else if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("round %d (%d goroutines) differs:\n%s\nwant:\n%s", round, 1+round, buf.Bytes(), want)
		}
	}
}

func TestLimitAddsOtherRow(t *testing.T) {
	r := collect(testPages(), 2, Options{Limit: 2})
	if n := len(r.Extensions); n != 3 || r.Extensions[1].Key != ".gif" || r.Extensions[2].Key != keyOther || r.Extensions[2].Count != 3 {
		t.Errorf("extensions with limit 2: %+v", r.Extensions)
	}
	if len(r.TopDomainsByServers) != 2 {
		t.Errorf("top domains with limit 2: %+v", r.TopDomainsByServers)
	}
}

func TestOutputsEscapeData(t *testing.T) {
	evil := page(1, "http://evil.example/<script>", 200, "10.0.0.1",
		"Server: <script>alert(1)</script>\r\nContent-Type: text/html\r\n", `<a href="http://x.example/">`)
	r := collect([]*storage.Page{evil}, 1, Options{})
	r.Extensions = append(r.Extensions, Count{"\x1b[31mred", 1}) // parsers upstream refuse these; the writers must too
	var html bytes.Buffer
	if err := r.WriteHTML(&html, "Report <for> you"); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	if strings.Contains(h, "<script>") || !strings.Contains(h, "&lt;script&gt;") || !strings.Contains(h, "Report &lt;for&gt; you") {
		t.Errorf("HTML report does not escape data:\n%s", h)
	}
	for _, external := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(h, external) {
			t.Errorf("HTML report refers to something outside itself (%s)", external)
		}
	}
	if !strings.Contains(h, "<svg") {
		t.Error("HTML report has no charts")
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "\x1b") {
		t.Errorf("text output passes a control character through:\n%q", text.String())
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Summary != r.Summary {
		t.Errorf("JSON does not round-trip: %v", err)
	}
}

func TestEmptyStore(t *testing.T) {
	r := New(Options{}).Report()
	for _, f := range []func() error{
		func() error { return r.WriteText(&bytes.Buffer{}) },
		func() error { return r.WriteJSON(&bytes.Buffer{}) },
		func() error { return r.WriteHTML(&bytes.Buffer{}, "empty") },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClassifyHost(t *testing.T) {
	for host, want := range map[string]hostClass{
		"www.ku.ac.th":     {"ac.th", "ku.ac.th"},
		"ku.ac.th":         {"ac.th", "ku.ac.th"},
		"ac.th":            {"ac.th", "ac.th"},
		"www.google.com":   {"com", "google.com"},
		"user.github.io":   {"io", "github.io"},
		"a.b.blogspot.com": {"com", "blogspot.com"},
		"host.unknowntld":  {"unknowntld", "host.unknowntld"},
		"localhost":        {"localhost", "localhost"},
		"10.1.2.3":         {keyIP, "10.1.2.3"},
		"[2001:db8::1]":    {keyIP, "[2001:db8::1]"},
		"":                 {keyBadURL, keyBadURL},
		"www.example.com.": {"com", "example.com"},
	} {
		if got := classifyHost(host); got != want {
			t.Errorf("classifyHost(%q) = %+v, want %+v", host, got, want)
		}
	}
}

func TestHostOfAndExtension(t *testing.T) {
	for u, want := range map[string]string{
		"http://www.ku.ac.th/a":        "www.ku.ac.th",
		"https://u:p@Host.EXAMPLE:81/": "host.example",
		"http://[2001:DB8::1]:8080/x":  "[2001:db8::1]",
		"http://h?q":                   "h",
		"mailto:x@y":                   "",
	} {
		if got := hostOf(u); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", u, got, want)
		}
	}
	for u, want := range map[string]string{
		"http://h/":                 keyNone,
		"http://h":                  keyNone,
		"http://h/a/b.HTML?x=y.z":   ".html",
		"http://h/a.tar.gz":         ".gz",
		"http://h/dir.d/":           keyNone,
		"http://h/x.verylongext123": keyOther,
		"http://h/x.a%20b":          keyOther,
		"http://h/.":                keyNone,
	} {
		if got := extensionOf(u); got != want {
			t.Errorf("extensionOf(%q) = %q, want %q", u, got, want)
		}
	}
}

func TestReportTwiceIsTheSame(t *testing.T) {
	c := New(Options{})
	// Two partials sharing hosts, as two scan goroutines would leave them.
	parts := []*partial{newPartial(), newPartial()}
	for i, p := range testPages() {
		parts[i%2].add(p)
		parts[(i+1)%2].add(p)
	}
	c.all = parts
	var a, b bytes.Buffer
	c.Report().WriteJSON(&a)
	c.Report().WriteJSON(&b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("second report differs:\n%s\nfirst:\n%s", b.Bytes(), a.Bytes())
	}
}
