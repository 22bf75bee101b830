package robots

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
//     RetryMin and doubles with each consecutive failure up to RetryMax;
//     except that when the cache still holds the rules of an earlier
//     successful fetch whose freshness ended less than StaleFor ago, those
//     rules are kept instead (RFC 9309 section 2.4 allows a cached copy past
//     24 hours when the file is unreachable), retried on the same back-off,
//     until StaleFor has passed. A server's passing 5xx then does not stop
//     the crawl of a site whose rules are known. Only a fetched robots.txt
//     is served stale: an origin that had none (4xx) is disallowed, as a
//     5xx may be an overloaded server asking to be left alone. The copy
//     and the failure count live in the Cache, so an origin the Cache
//     evicted has none (a full Cache evicts an origin counting failures
//     only after the others it looks at).
type Source struct {
	Fetcher  *Fetcher
	Cache    *Cache
	TTL      time.Duration    // DefaultTTL when 0 (the cache caps it too)
	RetryMin time.Duration    // 1 minute when 0
	RetryMax time.Duration    // 1 hour when 0
	StaleFor time.Duration    // DefaultStaleFor when 0; never serve stale when < 0
	Now      func() time.Time // time.Now when nil; tests set a fake clock

	mu       sync.Mutex
	inflight map[string]*fetchCall
	// abandoned counts fetches whose caller's context ended before they
	// had an outcome, their request sent: nothing was cached, the next
	// caller fetches again.
	abandoned atomic.Int64
}

type fetchCall struct {
	done  chan struct{}
	rules *Rules
	// abandoned: the caller that fetched gave up (its context ended), so
	// rules say nothing of the origin; a waiter asks again itself.
	abandoned bool
}

// Abandoned returns how many robots.txt fetches were cut short: their
// request went out and their caller's context ended (a crawl slot's
// cutoff, the crawl stopping) before the answer came whole. Their origins
// are fetched again at their next use. A fetch whose request the end kept
// from going out (the Doer's error wraps ErrNotSent) is not counted: it
// lost nothing but the turn.
func (s *Source) Abandoned() int64 { return s.abandoned.Load() }

// ErrNotSent, wrapped in a Doer's error, says that the request was never
// sent (the caller's context ended first), so that Abandoned counts only
// fetches cut short.
var ErrNotSent = errors.New("robots: the request was not sent")

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Allowed reports whether rawURL (absolute, http or https) may be fetched,
// fetching its origin's robots.txt when the cache has no fresh entry. It
// is false too when ctx ended first (see Rules): check ctx.Err() before
// taking false for the rules' answer.
func (s *Source) Allowed(ctx context.Context, rawURL string) bool {
	return s.Rules(ctx, OriginOf(rawURL)).AllowedURL(rawURL)
}

// Rules returns the rules for origin ("scheme://authority"). When ctx
// ends before they are known, it returns DisallowAll and caches nothing
// (Abandoned counts the fetch it cut short): the caller tells that "not
// now" from an unreachable robots.txt by ctx.Err() and the DisallowAll,
// and must not take the origin's URLs as disallowed by its rules. An
// answer that came whole before ctx ended is cached and returned as
// usual, so a caller that records what a fetch found (a Crawl-delay)
// records it whether or not ctx has ended.
func (s *Source) Rules(ctx context.Context, origin string) *Rules {
	if origin == "" {
		return DisallowAll() // not an absolute URL: nothing to fetch
	}
	for {
		if r, ok := s.rules(ctx, origin); ok {
			return r
		}
	}
}

// rules is one try of Rules: !ok when it waited for another caller's fetch
// that was abandoned while ctx is still live. That caller's DisallowAll
// came from its own context ending: handed on, it had a caller that never
// gave up take the origin's URLs as unreachable.
func (s *Source) rules(ctx context.Context, origin string) (r *Rules, ok bool) {
	if r, ok := s.Cache.Get(origin, s.now()); ok {
		return r, true
	}
	s.mu.Lock()
	// A fetch may have finished between the lookup and the lock: it caches
	// its rules before it leaves inflight, so look again.
	if r, ok := s.Cache.Get(origin, s.now()); ok {
		s.mu.Unlock()
		return r, true
	}
	if c, ok := s.inflight[origin]; ok {
		s.mu.Unlock()
		select {
		case <-c.done:
			return c.rules, !c.abandoned || ctx.Err() != nil
		case <-ctx.Done():
			return DisallowAll(), true
		}
	}
	if s.inflight == nil {
		s.inflight = make(map[string]*fetchCall)
	}
	c := &fetchCall{done: make(chan struct{})}
	s.inflight[origin] = c
	s.mu.Unlock()

	c.rules, c.abandoned = s.refresh(ctx, origin)

	s.mu.Lock()
	delete(s.inflight, origin)
	s.mu.Unlock()
	close(c.done)
	return c.rules, true
}

// refresh fetches origin's robots.txt and caches the outcome; abandoned
// when ctx ended first (nothing cached, the rules DisallowAll).
func (s *Source) refresh(ctx context.Context, origin string) (r *Rules, abandoned bool) {
	res := s.Fetcher.Fetch(ctx, origin)
	if ctx.Err() != nil && !answered(res) {
		// The caller gave up; that says nothing about the origin. A
		// redirect's next hop not sent still cut the fetch short.
		if !errors.Is(res.Err, ErrNotSent) || res.Redirects > 0 {
			s.abandoned.Add(1)
		}
		return DisallowAll(), true
	}
	now := s.now()
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	switch res.Outcome {
	case Unreachable:
		_, failures := s.Cache.ID(origin)
		failures++
		ttl = s.backoff(failures)
		if old, good := s.Cache.stale(origin); old != nil && s.StaleFor >= 0 {
			staleFor := s.StaleFor
			if staleFor == 0 {
				staleFor = DefaultStaleFor
			}
			if left := time.Duration(good-now.UnixNano()) + staleFor; left > 0 {
				// Retry no later than the end of the stale copy's life.
				s.Cache.put(origin, old, now, min(ttl, left), failures, good)
				return old, false
			}
		}
		s.Cache.Put(origin, res.Rules, now, ttl, failures)
	case Fetched:
		s.Cache.put(origin, res.Rules, now, ttl, 0, justFetched)
	default:
		s.Cache.Put(origin, res.Rules, now, ttl, 0)
	}
	return res.Rules, false
}

// answered reports whether res is an answer that came whole, which a
// caller's context ending after it does not make less true: a file read
// to its end (or to the limit), a 4xx. A file read whole just as a slot
// ended was thrown away and fetched again at the host's next list. An
// unreachable one may be the context's doing (a body or a redirect chain
// cut short), and its back-off is for a caller that hears of it.
func answered(res Result) bool {
	return res.Outcome != Unreachable
}

// DefaultStaleFor is how long after its freshness ended a fetched
// robots.txt is still used while its origin is unreachable.
const DefaultStaleFor = 24 * time.Hour

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
