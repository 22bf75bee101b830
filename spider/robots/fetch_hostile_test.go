package robots

import (
	"context"
	"net/http"
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
