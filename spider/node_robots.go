package spider

import (
	"context"
	"net/url"
	"time"

	"github.com/kspider/kspider/collector"
)

// maxRobotsRedirects is how many redirects a robots.txt fetch follows
// (RFC 9309 §2.3.1.2: at least five); past them robots.txt counts as
// unavailable, like a 4xx.
const maxRobotsRedirects = 5

// fetchRobots fetches robots.txt at u through the collector, following up
// to maxRobotsRedirects redirects (to other authorities too), each hop a
// list of its own after the collector's reconnect gap, so that a host never
// sees two connections at once. The result is the last hop's; release
// gives its buffers back.
func (n *Node) fetchRobots(ctx context.Context, u string) (*collector.Result, func()) {
	for hop := 0; ; hop++ {
		b := n.coll.Fetch(ctx, &collector.List{Requests: []collector.Request{{URL: u}}, Linger: true})
		res := &b.Results[0]
		release := func() { n.coll.Release(b) }
		if res.Status/100 != 3 || res.Location == "" || hop == maxRobotsRedirects {
			return res, release
		}
		next, ok := resolveRedirect(u, res.Location)
		if !ok {
			return res, release
		}
		release()
		n.cfg.Logf("robots.txt %s redirects to %s", u, next)
		if !n.reconnectGap(ctx) {
			// Stopped: the caller sees a cancelled fetch.
			b := n.coll.Fetch(ctx, &collector.List{Requests: []collector.Request{{URL: next}}, Linger: true})
			return &b.Results[0], func() { n.coll.Release(b) }
		}
		u = next
	}
}

// resolveRedirect resolves a Location against the URL it came from; only
// http(s) targets count.
func resolveRedirect(from, loc string) (string, bool) {
	base, err := url.Parse(from)
	if err != nil {
		return "", false
	}
	t, err := base.Parse(loc)
	if err != nil || (t.Scheme != "http" && t.Scheme != "https") || t.Host == "" {
		return "", false
	}
	t.Fragment = ""
	return t.String(), true
}

// reconnectGap waits the gap the collector keeps between a host's
// connections (at least 50 ms): the connection just closed may not be seen
// closed by the server yet. False when ctx ended first.
func (n *Node) reconnectGap(ctx context.Context) bool {
	t := time.NewTimer(max(n.cfg.Collector.ReconnectGap, 50*time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
