package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// site is a small web on loopback: each page's links, and robots.txt.
var site = map[string]string{
	"/":       `<a href="/a.html">a</a> <a href="b/">b</a> <a href="/c.html#x">c</a> <a href="/d.pdf">pdf</a> <a href="/e.html?x=1">query</a> <a href="http://other.example/f.html">other host</a> <a href="/a.html">a again</a>`,
	"/a.html": `<a href="g.html">g</a> <a href="/">home</a>`,
	"/b/":     `<a href="h.html">h, disallowed</a>`,
	"/c.html": `<a href="#top">self</a>`,
	"/g.html": `<a href="/c.html">c</a>`,
}

func TestCrawl(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.RequestURI()]++
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /b/h.html\n")
			return
		}
		body, ok := site[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>%s</body></html>", body)
	}))
	defer srv.Close()

	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--json", "--threads", "4", srv.URL + "/"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if res.Pages != 5 || res.Errors != 0 || res.Bytes == 0 || res.PagesPerS <= 0 || res.CPUMsPerPage <= 0 || res.PeakRSSMB <= 0 || res.Threads != 4 {
		t.Errorf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/", "/a.html", "/b/", "/c.html", "/g.html"} {
		if hits[p] != 1 {
			t.Errorf("%s fetched %d times, want once", p, hits[p])
		}
	}
	for _, p := range []string{"/b/h.html", "/d.pdf", "/e.html?x=1"} {
		if hits[p] != 0 {
			t.Errorf("%s (out of scope or disallowed) fetched", p)
		}
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, &out, &errOut); code != 2 {
		t.Errorf("no seeds: exit %d", code)
	}
	if code := run(context.Background(), []string{"ftp://x/"}, &out, &errOut); code != 1 {
		t.Errorf("bad seed: exit %d", code)
	}
}
