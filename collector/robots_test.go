package collector

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// robotsRun fetches a list of n pages with Robots and AfterRobots against a
// raw server whose /robots.txt is answered by robotsTxt (pages by ok), and
// checks what every hostile case must keep: AfterRobots called exactly
// once, before Each sees robots.txt and before the server sees any page
// request; never two connections at once; every result final.
func robotsRun(t *testing.T, depth int, l *List, robotsTxt func(cs *rawConn, req *http.Request) bool,
	after func(r *Result) []bool) (*rawServer, *Batch) {
	t.Helper()
	var s *rawServer
	s = startRaw(t, func(cs *rawConn, req *http.Request) bool {
		if req.URL.Path == "/robots.txt" {
			return robotsTxt(cs, req)
		}
		cs.ok(req)
		return true
	})
	c := rawCollector(t, Config{Pipeline: depth})
	for i := range 4 {
		l.Requests = append(l.Requests, Request{ID: uint64(i), URL: s.url(fmt.Sprintf("/p%d", i))})
	}
	var calls, eachRobots atomic.Int32
	l.Robots = true
	l.AfterRobots = func(r *Result) []bool {
		calls.Add(1)
		if eachRobots.Load() != 0 {
			t.Errorf("Each saw robots.txt before AfterRobots")
		}
		_, _, hits := s.stats()
		for p, n := range hits {
			if p != "/robots.txt" && n > 0 {
				t.Errorf("the server saw %s before AfterRobots was called", p)
			}
		}
		return after(r)
	}
	l.Each = func(r *Result) {
		if strings.HasSuffix(r.URL, "/robots.txt") {
			eachRobots.Add(1)
		}
	}
	b := c.Fetch(context.Background(), l)
	t.Cleanup(func() { c.Release(b) })
	if calls.Load() != 1 || eachRobots.Load() != 1 {
		t.Errorf("AfterRobots called %d times, Each with robots.txt %d times; want 1 and 1", calls.Load(), eachRobots.Load())
	}
	if _, maxOpen, _ := s.stats(); maxOpen > 1 {
		t.Errorf("%d connections open at once", maxOpen)
	}
	return s, b
}

// skipOdd skips the odd pages.
func skipOdd(*Result) []bool { return []bool{false, true, false, true} }

// TestAfterRobots: robots.txt and the pages it allows over one connection,
// the skipped pages never sent, with pipelining off and on; and each
// hostile robots.txt a clear outcome.
func TestAfterRobots(t *testing.T) {
	for _, depth := range []int{1, 8} {
		t.Run(fmt.Sprintf("pipeline=%d", depth), func(t *testing.T) { afterRobots(t, depth) })
	}
}

func afterRobots(t *testing.T, depth int) {
	const rules = "User-agent: *\nDisallow: /p1\n"
	serve := func(cs *rawConn, req *http.Request) bool {
		fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(rules), rules)
		return true
	}
	checkSkipped := func(t *testing.T, s *rawServer, b *Batch) {
		t.Helper()
		_, _, hits := s.stats()
		for i := range b.Results {
			r := &b.Results[i]
			switch {
			case i%2 == 1 && (r.Kind != Skipped || r.Attempts != 0 || hits[fmt.Sprintf("/p%d", i)] != 0):
				t.Errorf("%s: kind %s, %d attempts, %d hits; want skipped, never sent", r.URL, r.Kind, r.Attempts, hits[fmt.Sprintf("/p%d", i)])
			case i%2 == 0 && (r.Kind != OK || string(r.Body) != bodyOf(fmt.Sprintf("/p%d", i))):
				t.Errorf("%s: kind %s (%v), body %.30q", r.URL, r.Kind, r.Err, r.Body)
			}
		}
	}

	t.Run("one connection", func(t *testing.T) {
		var got string
		s, b := robotsRun(t, depth, &List{}, serve, func(r *Result) []bool {
			got = string(r.Body)
			return skipOdd(r)
		})
		checkSkipped(t, s, b)
		if conns, _, _ := s.stats(); conns != 1 || got != rules || b.Robots.Kind != OK {
			t.Errorf("%d connections, robots.txt %s %q; want 1, %q", conns, b.Robots.Kind, got, rules)
		}
	})

	t.Run("skip all", func(t *testing.T) {
		s, b := robotsRun(t, depth, &List{}, serve, func(*Result) []bool { return []bool{true, true, true, true, true} })
		_, _, hits := s.stats()
		for i := range b.Results {
			if b.Results[i].Kind != Skipped {
				t.Errorf("%s: %s, want skipped", b.Results[i].URL, b.Results[i].Kind)
			}
		}
		if len(hits) != 1 || b.Connections != 1 {
			t.Errorf("hits %v over %d connections; want robots.txt only, one connection", hits, b.Connections)
		}
	})

	t.Run("body over its cap", func(t *testing.T) {
		// 64 KiB of robots.txt against a 1 KiB cap: cut, the connection
		// closed, the pages over a second one.
		big := strings.Repeat("# padding line\n", 64<<10/15)
		var n int
		var kind Kind
		var trunc bool
		s, b := robotsRun(t, depth, &List{RobotsMaxBody: 1 << 10}, func(cs *rawConn, req *http.Request) bool {
			fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(big), big)
			return true
		}, func(r *Result) []bool {
			n, kind, trunc = len(r.Body), r.Kind, r.Truncated
			return skipOdd(r)
		})
		checkSkipped(t, s, b)
		if n != 1<<10 || kind != TooLarge || !trunc || b.Connections != 2 {
			t.Errorf("robots.txt: %d bytes, %s, truncated %v, %d connections; want 1024, too-large, truncated, 2", n, kind, trunc, b.Connections)
		}
	})

	for _, tc := range []struct {
		name   string
		answer string
		kind   Kind
		status int
	}{
		{"503", "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 60\r\nContent-Length: 0\r\n\r\n", OK, 503},
		{"status 999", "HTTP/1.1 999 Nope\r\nContent-Length: 0\r\n\r\n", BadResponse, 0},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", BadResponse, 0},
		{"garbage", "\x00\x01 not http at all\r\n\r\n", BadResponse, 0},
		{"cut mid-body", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nUser-agent: *\nDisall", Reset, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kind Kind
			var status int
			s, b := robotsRun(t, depth, &List{}, func(cs *rawConn, req *http.Request) bool {
				cs.bw.WriteString(tc.answer)
				return false // and close
			}, func(r *Result) []bool {
				kind, status = r.Kind, r.Status
				return skipOdd(r)
			})
			// The pages allowed go over a new connection after the gap.
			checkSkipped(t, s, b)
			if kind != tc.kind || status != tc.status || b.Connections != 2 {
				t.Errorf("robots.txt: %s, status %d over %d connections; want %s, %d, 2", kind, status, b.Connections, tc.kind, tc.status)
			}
		})
	}

	t.Run("never answered", func(t *testing.T) {
		// Two connections in a row that answer nothing end the list: the
		// hook hears it, and the pages are never sent.
		var kind Kind
		s, b := robotsRun(t, depth, &List{}, func(cs *rawConn, req *http.Request) bool { return false },
			func(r *Result) []bool { kind = r.Kind; return skipOdd(r) })
		_, _, hits := s.stats()
		if kind != Reset || len(hits) != 1 {
			t.Errorf("robots.txt %s, hits %v; want reset, robots.txt only", kind, hits)
		}
		for i := range b.Results {
			if want := []Kind{Reset, Skipped}[i%2]; b.Results[i].Kind != want {
				t.Errorf("%s: %s, want %s", b.Results[i].URL, b.Results[i].Kind, want)
			}
		}
	})

	t.Run("stop from the hook", func(t *testing.T) {
		// A node stopping while robots.txt is read: nothing more is sent.
		stop := make(chan struct{})
		s, b := robotsRun(t, depth, &List{Stop: stop}, serve, func(*Result) []bool { close(stop); return nil })
		_, _, hits := s.stats()
		for i := range b.Results {
			if b.Results[i].Kind != NotTried {
				t.Errorf("%s: %s, want not-tried", b.Results[i].URL, b.Results[i].Kind)
			}
		}
		if len(hits) != 1 {
			t.Errorf("hits %v, want robots.txt only", hits)
		}
	})
}

// TestAfterRobotsCanceled: a list cancelled before it starts still tells
// AfterRobots (robots.txt NotTried), once, and sends nothing.
func TestAfterRobotsCanceled(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool { cs.ok(req); return true })
	c := rawCollector(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := rawList(s, 3)
	l.Robots = true
	calls := 0
	var kind Kind
	l.AfterRobots = func(r *Result) []bool { calls++; kind = r.Kind; return nil }
	b := c.Fetch(ctx, l)
	defer c.Release(b)
	// Fetch returned before a fetcher took the list: nothing ran.
	if calls > 1 || calls == 1 && kind != NotTried {
		t.Errorf("AfterRobots: %d calls, kind %s", calls, kind)
	}
	if conns, _, _ := s.stats(); conns != 0 {
		t.Errorf("%d connections for a cancelled list", conns)
	}
}
