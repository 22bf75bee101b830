package robots

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"sync"
	"time"
)

// DefaultTTL is how long a fetched robots.txt is trusted: RFC 9309 section
// 2.4 says crawlers should not use a cached copy for more than 24 hours.
const DefaultTTL = 24 * time.Hour

// Cache is the thesis's robots cache: it maps an origin ("http://host:port")
// to the id of a compiled rule set, and ids to rule sets. Origins with
// identical rules (most sites have none, or the default of their CMS) share
// one set. It holds at most a fixed number of origins, evicting expired ones
// first and otherwise a random one, and rule sets of at most DefaultCacheBytes
// between them, evicting origins of the largest sets first, and forgets each
// origin after its time to live. It is safe for concurrent use; a lookup takes a read lock and
// allocates nothing.
type Cache struct {
	maxTTL   time.Duration
	max      int
	maxBytes int64 // DefaultCacheBytes; tests lower it

	mu      sync.RWMutex
	origins map[string]originEntry
	sets    []ruleSet           // by id; a free slot has rules == nil
	free    []uint32            // ids of free slots
	byKey   map[[16]byte]uint32 // rule-set fingerprint -> id
	bytes   int64               // Rules.size of the sets held
	evicted int64               // origins evicted to keep bytes within maxBytes
}

// DefaultCacheBytes bounds the rule sets a Cache holds, as estimated from
// their patterns. A robots.txt of 512 KiB compiles to some 2 MiB (30,000
// patterns), so with only a bound on origins a web of hosts serving such
// files (or one file each, no two alike) held 2 GiB for every 1,000 of them.
// Real sets are a few KiB: this holds tens of thousands of those.
const DefaultCacheBytes = 256 << 20

// originEntry is what the cache knows of one origin.
type originEntry struct {
	id       uint32
	expires  int64  // unix nanoseconds
	failures uint32 // consecutive unreachable fetches (for back-off)
	// good is when the rules' last successful fetch stopped being fresh
	// (unix nanoseconds), 0 when the rules do not come from a fetched
	// robots.txt: Source serves such rules, stale, for a bounded time
	// after that while the origin is unreachable.
	good int64
}

type ruleSet struct {
	rules *Rules
	key   [16]byte
	refs  int
}

// NewCache returns a cache for at most maxOrigins origins (at least 1) whose
// entries live at most maxTTL (DefaultTTL when <= 0).
func NewCache(maxOrigins int, maxTTL time.Duration) *Cache {
	if maxOrigins < 1 {
		maxOrigins = 1
	}
	if maxTTL <= 0 {
		maxTTL = DefaultTTL
	}
	return &Cache{
		maxTTL:   maxTTL,
		max:      maxOrigins,
		maxBytes: DefaultCacheBytes,
		origins:  make(map[string]originEntry),
		sets:     make([]ruleSet, 1), // id 0 is never used
		byKey:    make(map[[16]byte]uint32),
	}
}

// Get returns the rules cached for origin, if any and not expired at now.
func (c *Cache) Get(origin string, now time.Time) (*Rules, bool) {
	c.mu.RLock()
	e, ok := c.origins[origin]
	var r *Rules
	if ok && now.UnixNano() < e.expires {
		r = c.sets[e.id].rules
	}
	c.mu.RUnlock()
	return r, r != nil
}

// Allowed checks an absolute URL against the rules cached for its origin.
// cached is false when the origin has no fresh entry; allowed is then false.
func (c *Cache) Allowed(rawURL string, now time.Time) (allowed, cached bool) {
	origin, path := splitURL(rawURL)
	r, ok := c.Get(origin, now)
	if !ok {
		return false, false
	}
	return r.Allowed(path), true
}

// ID returns the rule-set id cached for origin (0 when none), expired or
// not, and the number of consecutive failed fetches recorded with it.
func (c *Cache) ID(origin string) (id uint32, failures int) {
	c.mu.RLock()
	e := c.origins[origin]
	c.mu.RUnlock()
	return e.id, int(e.failures)
}

// Put caches rules for origin until now+ttl (ttl is capped at the cache's
// maximum), recording failures consecutive failed fetches, and returns the
// rule-set id. Rules put this way are never served stale (see Source).
func (c *Cache) Put(origin string, r *Rules, now time.Time, ttl time.Duration, failures int) uint32 {
	return c.put(origin, r, now, ttl, failures, 0)
}

// stale returns the rules cached for origin, expired or not, if they come
// from a fetched robots.txt, and when they stopped being fresh.
func (c *Cache) stale(origin string) (r *Rules, good int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.origins[origin]
	if !ok || e.good == 0 {
		return nil, 0
	}
	return c.sets[e.id].rules, e.good
}

// justFetched, passed to put as good, says the rules come from a robots.txt
// fetched now: they are fresh until the entry expires.
const justFetched = -1

// put is Put recording good (see originEntry), or the entry's expiry when
// good is justFetched.
func (c *Cache) put(origin string, r *Rules, now time.Time, ttl time.Duration, failures int, good int64) uint32 {
	if ttl <= 0 || ttl > c.maxTTL {
		ttl = c.maxTTL
	}
	expires := now.Add(ttl).UnixNano()
	if good == justFetched {
		good = expires
	}
	key := r.fp
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.origins[origin]
	if !had && len(c.origins) >= c.max {
		c.evictLocked(now.UnixNano(), origin, false)
	}
	id, ok := c.byKey[key]
	if !ok {
		if n := len(c.free); n > 0 {
			id = c.free[n-1]
			c.free = c.free[:n-1]
			c.sets[id] = ruleSet{rules: r, key: key}
		} else {
			id = uint32(len(c.sets))
			c.sets = append(c.sets, ruleSet{rules: r, key: key})
		}
		c.byKey[key] = id
		c.bytes += r.size
	}
	c.sets[id].refs++
	if had {
		c.releaseLocked(old.id)
	}
	c.origins[origin] = originEntry{id: id, expires: expires, failures: uint32(min(failures, 1<<30)), good: good}
	for c.bytes > c.maxBytes && len(c.origins) > 1 {
		c.evictLocked(now.UnixNano(), origin, true)
		c.evicted++
	}
	return id
}

// Bytes returns about how many bytes the cached rule sets hold, and how
// many origins were evicted to keep that within DefaultCacheBytes (each is
// fetched again when next needed).
func (c *Cache) Bytes() (held, evicted int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.bytes, c.evicted
}

// Len returns the number of cached origins and of distinct rule sets.
func (c *Cache) Len() (origins, sets int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.origins), len(c.byKey)
}

// evictLocked removes one origin other than keep: an expired one among the
// first few the map yields, else the first (map order is random, so this is
// random eviction), one counting failed fetches only when all those do;
// with big, the one of the largest rule set among the first 32.
func (c *Cache) evictLocked(now int64, keep string, big bool) {
	look := 8
	if big {
		// Wider: an origin of a small set frees nothing when others share
		// its set, and little when not.
		look = 32
	}
	victim, n := "", 0
	var victimSize int64
	var victimFailures uint32
	for o, e := range c.origins {
		if o == keep {
			continue
		}
		if big {
			if size := c.sets[e.id].rules.size; victim == "" || size > victimSize {
				victim, victimSize = o, size
			}
		} else {
			// An expired entry is the cheapest to lose, but not one
			// counting failures: an unreachable origin's expires as its
			// back-off ends, and without its count the next failure would
			// start the back-off again at its shortest.
			expired := e.expires <= now && e.failures == 0
			if victim == "" || expired || victimFailures > 0 && e.failures == 0 {
				victim, victimFailures = o, e.failures
				if expired {
					break
				}
			}
		}
		if n++; n >= look {
			break
		}
	}
	if victim != "" {
		c.releaseLocked(c.origins[victim].id)
		delete(c.origins, victim)
	}
}

func (c *Cache) releaseLocked(id uint32) {
	s := &c.sets[id]
	if s.refs--; s.refs > 0 {
		return
	}
	c.bytes -= s.rules.size
	delete(c.byKey, s.key)
	*s = ruleSet{}
	c.free = append(c.free, id)
}

// fingerprint identifies a rule set by what decides: its patterns in
// decision order and its crawl delay. It is the first 128 bits of a SHA-256,
// so two different rule sets sharing an id would take a collision nobody has
// found; the cache keys rule sets by it instead of keeping their text twice.
func fingerprint(ps []pattern, delay time.Duration, hasDelay bool) [16]byte {
	h := sha256.New()
	var b [9]byte
	if hasDelay {
		b[0] = 1
		binary.LittleEndian.PutUint64(b[1:], uint64(delay))
	}
	h.Write(b[:])
	for i := range ps {
		p := &ps[i]
		switch {
		case p.allow && p.anchor:
			b[0] = 'A'
		case p.allow:
			b[0] = 'a'
		case p.anchor:
			b[0] = 'D'
		default:
			b[0] = 'd'
		}
		binary.LittleEndian.PutUint32(b[1:5], uint32(len(p.text)))
		h.Write(b[:5])
		io.WriteString(h, p.text)
	}
	var fp [16]byte
	copy(fp[:], h.Sum(nil))
	return fp
}
