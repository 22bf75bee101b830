package collector

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRequestTarget: the request line carries the URL's path and query as
// written. net/url's own serialisation, for a path holding a character it
// would escape ('|', '^'), rebuilt the path from its decoded form: %2F went
// out as '/', %2B as '+', and the server's page for another path was kept
// as this URL's.
func TestRequestTarget(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		mu.Lock()
		seen[req.RequestURI] = true
		mu.Unlock()
		cs.ok(req)
		return true
	})
	paths := []string{"/a%2Fb|c", "/x%2By^z?q=%2F|", "/plain?a=1", "/%7Cx|", "/a%3Bb%26c|"}
	l := &List{}
	for _, p := range paths {
		l.Requests = append(l.Requests, Request{URL: s.url(p)})
	}
	// A path that starts with "//" goes in absolute form: in origin form
	// it would be taken for an authority.
	l.Requests = append(l.Requests, Request{URL: s.url("//d|x")})
	c := rawCollector(t, Config{})
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	for i := range b.Results {
		if r := &b.Results[i]; r.Kind != OK {
			t.Errorf("%s: %s (%v)", r.URL, r.Kind, r.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range append(paths, s.url("//d|x")) {
		if !seen[want] {
			t.Errorf("request-target %q not sent; the server saw %v", want, seen)
		}
	}
}

// TestRequestTargetStrayPercent: a path holding a '%' that starts no escape
// ("/home%", 42 of a million URLs of a real crawl) is kept so by the
// canonical form, and browsers send it as written; it failed url.Parse and
// ended bad-url, never fetched. The server here reads request lines itself:
// http.ReadRequest refuses such a target as net/url does.
func TestRequestTargetStrayPercent(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					f := strings.Fields(line)
					for {
						h, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if h == "\r\n" {
							break
						}
					}
					if len(f) != 3 {
						return
					}
					mu.Lock()
					seen[f[1]] = true
					mu.Unlock()
					body := "page " + f[1]
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	base := "http://" + ln.Addr().String()
	paths := []string{"/home%", "/50%-off/x%2Fy", "/a%zz?q=%", "/%"}
	l := &List{}
	for _, p := range paths {
		l.Requests = append(l.Requests, Request{URL: base + p})
	}
	c := rawCollector(t, Config{})
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	for i := range b.Results {
		r := &b.Results[i]
		if r.Kind != OK {
			t.Errorf("%s: %s (%v)", r.URL, r.Kind, r.Err)
		} else if want := "page " + paths[i]; string(r.Body) != want {
			t.Errorf("%s: body %q, want %q", r.URL, r.Body, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range paths {
		if !seen[want] {
			t.Errorf("request-target %q not sent; the server saw %v", want, seen)
		}
	}
}
