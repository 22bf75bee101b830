package robots

import (
	"context"
	"testing"
	"time"
)

// TestSourceServesStaleCopy: an origin whose robots.txt was fetched and then
// becomes unreachable keeps its rules for StaleFor after they stopped being
// fresh, retried on the back-off (the last retry falling at the end of the
// window), and is disallowed after that until a fetch succeeds again.
func TestSourceServesStaleCopy(t *testing.T) {
	srv := newRobotsServer(t, body("user-agent: *\ndisallow: /private\n"))
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(100, 0),
		TTL: time.Hour, RetryMin: time.Minute, RetryMax: time.Hour, StaleFor: 3 * time.Hour, Now: clock.Now}
	ctx := context.Background()
	page, private := srv.URL+"/page", srv.URL+"/private/x"
	if !s.Allowed(ctx, page) || s.Allowed(ctx, private) || srv.hits.Load() != 1 {
		t.Fatalf("fresh rules not applied (%d fetches)", srv.hits.Load())
	}
	srv.set(status(503))
	// The copy went stale at t0+1h; it may be used until t0+4h. Retries
	// come after 1, 2, 4, ... minutes, capped at 1 h and at t0+4h.
	retries := []time.Duration{60, 61, 63, 67, 75, 91, 123, 183, 240} // minutes after t0
	for i, at := range retries {
		at *= time.Minute
		clock.t = t0.Add(at - time.Second)
		if !s.Allowed(ctx, page) || s.Allowed(ctx, private) {
			t.Fatalf("retry %d: stale rules not applied at t0+%v", i, at-time.Second)
		}
		if got, want := srv.hits.Load(), int64(1+i); got != want {
			t.Fatalf("retry %d: %d fetches at t0+%v, want %d", i, got, at-time.Second, want)
		}
		clock.t = t0.Add(at)
		allowed := s.Allowed(ctx, page)
		if got, want := srv.hits.Load(), int64(2+i); got != want {
			t.Fatalf("retry %d: %d fetches at t0+%v, want %d", i, got, at, want)
		}
		if last := i == len(retries)-1; allowed == last {
			t.Fatalf("retry %d at t0+%v: allowed = %v", i, at, allowed)
		}
	}
	if _, failures := s.Cache.ID(srv.URL); failures != len(retries) {
		t.Errorf("failures = %d, want %d", failures, len(retries))
	}
	// Past the window the stale copy is gone for good: later failures
	// disallow, and only a successful fetch brings rules back.
	clock.t = clock.t.Add(time.Hour)
	if s.Allowed(ctx, page) {
		t.Fatal("stale copy came back after its window")
	}
	srv.set(body("user-agent: *\ndisallow: /other\n"))
	clock.t = clock.t.Add(time.Hour)
	if !s.Allowed(ctx, private) || s.Allowed(ctx, srv.URL+"/other") {
		t.Fatal("new rules not applied after recovery")
	}
	if _, failures := s.Cache.ID(srv.URL); failures != 0 {
		t.Errorf("failures after recovery = %d", failures)
	}
}

// TestSourceStaleOnlyFromFetched: no stale copy for an origin that had no
// robots.txt (4xx), for rules put by hand, or when StaleFor is negative.
func TestSourceStaleOnlyFromFetched(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		first    func(s *Source, srv *robotsServer)
		staleFor time.Duration
		allowed  bool
	}{
		{"fetched", func(s *Source, srv *robotsServer) { srv.set(body("user-agent: *\ndisallow: /private\n")) }, 0, true},
		{"fetched, StaleFor < 0", func(s *Source, srv *robotsServer) { srv.set(body("user-agent: *\ndisallow: /private\n")) }, -1, false},
		{"404", func(s *Source, srv *robotsServer) { srv.set(status(404)) }, 0, false},
		{"Put", func(s *Source, srv *robotsServer) {
			s.Cache.Put(srv.URL, AllowAll(), t0, time.Hour, 0)
			srv.set(status(503))
		}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newRobotsServer(t, status(503))
			clock := &fakeClock{t: t0}
			s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(100, 0),
				TTL: time.Hour, StaleFor: c.staleFor, Now: clock.Now}
			c.first(s, srv)
			if !s.Allowed(ctx, srv.URL+"/page") {
				t.Fatal("first answer disallows /page")
			}
			srv.set(status(503))
			clock.Advance(time.Hour)
			if got := s.Allowed(ctx, srv.URL+"/page"); got != c.allowed {
				t.Fatalf("unreachable after an hour: allowed = %v, want %v", got, c.allowed)
			}
			if c.allowed {
				// DefaultStaleFor bounds it.
				clock.Advance(DefaultStaleFor)
				if s.Allowed(ctx, srv.URL+"/page") {
					t.Fatal("stale copy used past DefaultStaleFor")
				}
			}
		})
	}
}

// TestSourceBackoffSurvivesEviction: a full cache evicted expired entries
// first, and an unreachable origin's entry expires when its back-off ends,
// just before it is asked again: its failure count went with it, and a
// host down for days was retried at the shortest back-off after each
// eviction. Now an entry counting failures goes after the others.
func TestSourceBackoffSurvivesEviction(t *testing.T) {
	down := newRobotsServer(t, status(503))
	up1 := newRobotsServer(t, body("user-agent: *\ndisallow: /a\n"))
	up2 := newRobotsServer(t, body("user-agent: *\ndisallow: /b\n"))
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	s := &Source{Fetcher: newFetcher(5 * time.Second), Cache: NewCache(2, 0),
		TTL: 24 * time.Hour, RetryMin: time.Minute, RetryMax: time.Hour, Now: clock.Now}
	ctx := context.Background()
	s.Rules(ctx, down.URL)
	s.Rules(ctx, up1.URL)
	clock.t = t0.Add(2 * time.Minute) // the down origin's back-off is over
	s.Rules(ctx, up2.URL)             // the cache is full: one origin goes
	s.Rules(ctx, down.URL)
	if _, failures := s.Cache.ID(down.URL); failures != 2 {
		t.Errorf("after a second failure, %d counted; want 2 (back-off doubled)", failures)
	}
	if down.hits.Load() != 2 {
		t.Errorf("robots.txt of the down origin asked %d times, want 2", down.hits.Load())
	}
}
