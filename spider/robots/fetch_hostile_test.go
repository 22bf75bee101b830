package robots

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFetchRedirectWithoutHost: a redirect whose Location names no host
// ("http:///robots.txt", "https:x") cannot be followed: it is a bad
// Location, Unavailable like one that does not parse, not a network
// failure that disallows the whole site (Unreachable), with the error
// naming the Location.
func TestFetchRedirectWithoutHost(t *testing.T) {
	f := newFetcher(5 * time.Second)
	for _, loc := range []string{"http:///robots.txt", "https:x", "http://:80/robots.txt"} {
		srv := newRobotsServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusMovedPermanently)
		})
		res := f.Fetch(context.Background(), srv.URL)
		if res.Outcome != Unavailable || res.Err == nil || !res.Rules.Allowed("/") || res.Redirects != 0 {
			t.Errorf("Location %q: %v after %d redirects (%v)", loc, res.Outcome, res.Redirects, res.Err)
		}
	}
}

// TestCacheBytesBound: hosts each serving a robots.txt of its own with
// thousands of rules (a 512 KiB file compiles to some 2 MiB) were held by
// the cache up to its bound on origins alone, 2 GiB for 1,000 such hosts.
// The sets now stay within the cache's bound in bytes, origins of the
// largest sets evicted first, counted; the origin just put stays, and so do
// the small sets while evicting the large ones is enough.
func TestCacheBytesBound(t *testing.T) {
	c := NewCache(1<<20, time.Hour)
	c.maxBytes = 4 << 20
	now := time.Unix(1e9, 0)
	small := Parse([]byte("user-agent: *\ndisallow: /tmp/\n")).Rules("x")
	for i := range 10 {
		c.Put(fmt.Sprintf("http://small%d", i), small, now, 0, 0)
	}
	var big strings.Builder
	for i := range 60 {
		big.Reset()
		big.WriteString("user-agent: *\n")
		for j := range 5000 {
			fmt.Fprintf(&big, "disallow: /h%d/p%d*\n", i, j)
		}
		origin := fmt.Sprintf("http://big%d", i)
		r := Parse([]byte(big.String())).Rules("x")
		c.Put(origin, r, now, 0, 0)
		if got, ok := c.Get(origin, now); !ok || got != r {
			t.Fatalf("%s: not cached just after its Put", origin)
		}
		if held, _ := c.Bytes(); held > c.maxBytes {
			t.Fatalf("after %s: %d bytes held, over the bound of %d", origin, held, c.maxBytes)
		}
	}
	if _, evicted := c.Bytes(); evicted == 0 {
		t.Error("no eviction counted")
	}
	for i := range 10 {
		if _, ok := c.Get(fmt.Sprintf("http://small%d", i), now); !ok {
			t.Errorf("small%d evicted while large sets were there to evict", i)
		}
	}
}

// TestCacheKeepsFixedRulesApart: an unreachable origin is cached with
// DisallowAll, which callers tell by identity ("not now"); a fetched
// "Disallow: /" has the same patterns, and the cache, sharing sets by
// fingerprint, gave the unreachable origin that site's rules back, so a
// node took it for a robots.txt forbidding everything and denied its URLs.
// (AllowAll shares with a file without rules on purpose: both allow all.)
func TestCacheKeepsUnreachableApart(t *testing.T) {
	c := NewCache(100, time.Hour)
	now := time.Unix(1e9, 0)
	c.Put("http://forbids", Parse([]byte("User-agent: *\nDisallow: /\n")).Rules("x"), now, 0, 0)
	c.Put("http://down", DisallowAll(), now, 0, 1)
	if r, _ := c.Get("http://down", now); r != DisallowAll() {
		t.Error("an unreachable origin's rules are not DisallowAll")
	}
	if r, _ := c.Get("http://forbids", now); r == DisallowAll() {
		t.Error("a fetched 'Disallow: /' reads as unreachable")
	}
}
