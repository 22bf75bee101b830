package robots

import (
	"context"
	"sync"
	"time"
)

// Source answers "may this URL be fetched?" for a crawler: from the Cache
// when the origin's rules are fresh, else by fetching its robots.txt (one
// fetch per origin at a time, whatever the number of callers) and caching
// the outcome:
//
//   - Fetched: the rules, for TTL;
//   - Unavailable: allow everything, for TTL;
//   - Unreachable: disallow everything, for a back-off that starts at
//     RetryMin and doubles with each consecutive failure up to RetryMax.
type Source struct {
	Fetcher  *Fetcher
	Cache    *Cache
	TTL      time.Duration    // DefaultTTL when 0 (the cache caps it too)
	RetryMin time.Duration    // 1 minute when 0
	RetryMax time.Duration    // 1 hour when 0
	Now      func() time.Time // time.Now when nil; tests set a fake clock

	mu       sync.Mutex
	inflight map[string]*fetchCall
}

type fetchCall struct {
	done  chan struct{}
	rules *Rules
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Allowed reports whether rawURL (absolute, http or https) may be fetched,
// fetching its origin's robots.txt when the cache has no fresh entry.
func (s *Source) Allowed(ctx context.Context, rawURL string) bool {
	return s.Rules(ctx, OriginOf(rawURL)).AllowedURL(rawURL)
}

// Rules returns the rules for origin ("scheme://authority").
func (s *Source) Rules(ctx context.Context, origin string) *Rules {
	if origin == "" {
		return DisallowAll() // not an absolute URL: nothing to fetch
	}
	if r, ok := s.Cache.Get(origin, s.now()); ok {
		return r
	}
	s.mu.Lock()
	// A fetch may have finished between the lookup and the lock: it caches
	// its rules before it leaves inflight, so look again.
	if r, ok := s.Cache.Get(origin, s.now()); ok {
		s.mu.Unlock()
		return r
	}
	if c, ok := s.inflight[origin]; ok {
		s.mu.Unlock()
		select {
		case <-c.done:
			return c.rules
		case <-ctx.Done():
			return DisallowAll()
		}
	}
	if s.inflight == nil {
		s.inflight = make(map[string]*fetchCall)
	}
	c := &fetchCall{done: make(chan struct{})}
	s.inflight[origin] = c
	s.mu.Unlock()

	c.rules = s.refresh(ctx, origin)

	s.mu.Lock()
	delete(s.inflight, origin)
	s.mu.Unlock()
	close(c.done)
	return c.rules
}

func (s *Source) refresh(ctx context.Context, origin string) *Rules {
	res := s.Fetcher.Fetch(ctx, origin)
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about the origin.
		return DisallowAll()
	}
	now := s.now()
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	failures := 0
	if res.Outcome == Unreachable {
		_, failures = s.Cache.ID(origin)
		failures++
		ttl = s.backoff(failures)
	}
	s.Cache.Put(origin, res.Rules, now, ttl, failures)
	return res.Rules
}

// backoff is the wait after the n-th consecutive failure (n >= 1).
func (s *Source) backoff(n int) time.Duration {
	lo, hi := s.RetryMin, s.RetryMax
	if lo <= 0 {
		lo = time.Minute
	}
	if hi <= 0 {
		hi = time.Hour
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}
