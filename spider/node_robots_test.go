package spider

import (
	"net/http"
	"testing"
	"time"
)

// crawlFlakyRobots crawls a robotsListSite whose robots.txt (disallowing
// /private/) is served once, then answered 503, with lists of one URL and
// a robots.txt that expires at once, so that every list asks for
// robots.txt again and meets the 503.
func crawlFlakyRobots(t *testing.T, staleFor time.Duration) (map[string]bool, map[string]int) {
	t.Helper()
	got, site := crawlRobotsList(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n > 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		servePrivateRules(w, r, n)
	}, func(cfg *NodeConfig) {
		// The 10 ms politeness delay stays: with none, the next list's
		// connection could be accepted before the server's hook has
		// counted the last one closed (the client waits for the server's
		// FIN, not for its bookkeeping), and the site saw two open.
		cfg.Scheduler.ListLen = 1
		cfg.RobotsTTL, cfg.RobotsStaleFor = time.Nanosecond, staleFor
	})
	return got, site.hits
}

// TestNodeRobotsStaleCopy: robots.txt fetched once, then unreachable
// (503). Within politeness.robots_stale_for the node keeps using the copy
// it has (still obeying its Disallow); with the stale copy off, nothing
// more is fetched once robots.txt is unreachable.
func TestNodeRobotsStaleCopy(t *testing.T) {
	got, hits := crawlFlakyRobots(t, time.Hour)
	if len(got) != 3 || !got["/"] || !got["/a"] || !got["/b"] || hits["/private/x"] != 0 || hits["/robots.txt"] < 2 {
		t.Errorf("with a stale copy: stored %v, requests %v; want /, /a, /b, robots.txt asked again, /private/x never", got, hits)
	}
	got, hits = crawlFlakyRobots(t, -1)
	if len(got) != 1 || !got["/"] || hits["/a"]+hits["/b"]+hits["/private/x"] != 0 {
		t.Errorf("without a stale copy: stored %v, requests %v; want / only", got, hits)
	}
}
