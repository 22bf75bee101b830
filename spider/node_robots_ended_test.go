package spider

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
)

// endedHook is the robots hook of a one-URL list of origin whose context
// has ended.
func endedHook(n *Node, origin string) *robotsHook {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &robotsHook{n: n, ctx: ctx, url: origin + "/a", reqs: []collector.Request{{ID: reqID(0), URL: origin + "/a"}},
		nURLs: 1, crawlCap: time.Minute}
}

// TestNodeRobotsKeptAtEnd: a robots.txt read whole on its list's
// connection just as the list's context ended (a slot's cutoff, the
// crawl stopping) was thrown away and counted abandoned, and the host's
// next list fetched it again. Now it is the host's answer: cached, and
// recorded (robotsFirst records the hook's verdict whether or not the
// context ended).
func TestNodeRobotsKeptAtEnd(t *testing.T) {
	n := robotsTestNode(t)
	const origin = "http://whole.test:81"
	h := endedHook(n, origin)
	h.after(&collector.Result{URL: origin + "/robots.txt", Status: 200, Kind: collector.OK, Attempts: 1,
		Header: http.Header{}, Body: []byte("user-agent: *\ndisallow: /private\n")})
	if v := h.verdict; !v.ok || !v.fetched || v.rules == nil || v.rules.Allowed("/private") {
		t.Errorf("verdict: ok %v, fetched %v, rules %v; want the file's rules, fetched", v.ok, v.fetched, v.rules)
	}
	if a := n.robots.src.Abandoned(); a != 0 {
		t.Errorf("%d robots.txt fetches abandoned; want none", a)
	}
	if r, fresh := n.robots.src.Cache.Get(origin, time.Now()); !fresh || r.Allowed("/private") {
		t.Errorf("cached: fresh %v; want the file's rules", fresh)
	}
}

// TestNodeRobotsUnsentNotAbandoned: robots_abandoned counted a robots.txt
// the list's end kept from being sent (the context ended while its
// connection was made), on the list's connection or on one of its own,
// as a fetch cut short: an operator read slots too short for a slow
// robots.txt where nothing had been asked. Only fetches sent count now.
func TestNodeRobotsUnsentNotAbandoned(t *testing.T) {
	n := robotsTestNode(t)
	h := endedHook(n, "http://unsent.test:81")
	h.after(&collector.Result{URL: "http://unsent.test:81/robots.txt", Kind: collector.NotTried})
	if a := n.robots.src.Abandoned(); a != 0 {
		t.Errorf("on the list's connection: %d robots.txt fetches abandoned; want none", a)
	}
	// On a connection of its own (rulesFor): the collector is handed an
	// ended context and sends nothing.
	if v := n.robotsVerdictFor(h.ctx, "http://127.0.0.1:1/a"); v.ok {
		t.Errorf("an ended context gave rules %v", v.rules)
	}
	if a := n.robots.src.Abandoned(); a != 0 {
		t.Errorf("on a connection of its own: %d robots.txt fetches abandoned; want none", a)
	}
	// Sent and cut short: counted.
	h.after(&collector.Result{URL: "http://unsent.test:81/robots.txt", Kind: collector.Canceled, Attempts: 1})
	if a := n.robots.src.Abandoned(); a != 1 {
		t.Errorf("cut short: %d robots.txt fetches abandoned; want 1", a)
	}
}
