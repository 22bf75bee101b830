package collector

import (
	"context"
	"net/http"
	"sync"
	"testing"
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
