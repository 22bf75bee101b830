package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
)

// Config configures a Resolver. The zero value is usable: servers from
// /etc/resolv.conf and the defaults named on each field.
type Config struct {
	Servers    []string // "ip" or "ip:port"; default: the name servers of ResolvConf
	ResolvConf string   // default /etc/resolv.conf

	Timeout time.Duration // per query and server; default 2 s
	// LookupTimeout bounds one name's whole resolution: every query, to
	// every server, over UDP and TCP, along the CNAME chain; default
	// 4 × Timeout.
	LookupTimeout time.Duration
	DownFor       time.Duration // how long a server that timed out is skipped; default 10 s

	Buckets int // cache buckets at most (rounded up to a power of two; the cache starts with 16 and grows); default 2048
	Slots   int // cache slots per bucket, at most MaxSlots; default 8

	MinTTL      time.Duration // floor on cached TTLs; default 30 s
	MaxTTL      time.Duration // ceiling on cached TTLs; default 1 h
	NegativeTTL time.Duration // NXDOMAIN and no-address answers; default 30 s
	ServFailTTL time.Duration // SERVFAIL, timeouts, bad CNAME chains; default 5 s

	// Network selects the address families: "ip4" (A), "ip6" (AAAA) or
	// "ip" (both, queried in parallel). Default "ip".
	Network string

	MaxCNAME            int // CNAME links followed; default 8
	Sockets             int // UDP sockets queries are spread over; default 2
	PrefetchConcurrency int // lookups Prefetch runs at once; default 32

	// Now is the clock the cache expires entries by. Default: the system
	// clock read every 50 ms by a goroutine (cheaper than time.Now per
	// hit). Tests inject their own.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	def(&c.Timeout, 2*time.Second)
	def(&c.LookupTimeout, 4*c.Timeout)
	def(&c.DownFor, 10*time.Second)
	defInt(&c.Buckets, 2048)
	defInt(&c.Slots, 8)
	def(&c.MinTTL, 30*time.Second)
	def(&c.MaxTTL, time.Hour)
	def(&c.NegativeTTL, 30*time.Second)
	def(&c.ServFailTTL, 5*time.Second)
	if c.Network == "" {
		c.Network = "ip"
	}
	defInt(&c.MaxCNAME, 8)
	defInt(&c.Sockets, 2)
	defInt(&c.PrefetchConcurrency, 32)
}

// Resolver is a caching DNS stub resolver; it is safe for concurrent use.
type Resolver struct {
	cfg     Config
	servers []server
	tr      *transport
	cache   *cache
	flight  flightGroup
	stats   counters
	closed  atomic.Bool
	coarse  *coarseClock // nil when Config.Now is set
	overdue error        // a lookup's error past LookupTimeout
}

// New returns a resolver for cfg. Close releases its sockets.
func New(cfg Config) (*Resolver, error) {
	cfg.setDefaults()
	switch cfg.Network {
	case "ip", "ip4", "ip6":
	default:
		return nil, fmt.Errorf("resolver: network %q is not ip, ip4 or ip6", cfg.Network)
	}
	if cfg.MinTTL > cfg.MaxTTL {
		return nil, fmt.Errorf("resolver: MinTTL %v exceeds MaxTTL %v", cfg.MinTTL, cfg.MaxTTL)
	}
	if cfg.Slots > MaxSlots {
		return nil, fmt.Errorf("resolver: %d slots per bucket is more than %d", cfg.Slots, MaxSlots)
	}
	names := cfg.Servers
	if len(names) == 0 {
		var err error
		if names, err = systemServers(cfg.ResolvConf); err != nil {
			return nil, err
		}
	}
	r := &Resolver{cfg: cfg, servers: make([]server, len(names)), cache: newCache(cfg.Buckets, cfg.Slots),
		overdue: fmt.Errorf("%w: no answer within %v (the whole lookup's bound)", ErrLookupTimeout, cfg.LookupTimeout)}
	addrs := make([]netip.AddrPort, len(names))
	for i, s := range names {
		ap, err := parseServer(s)
		if err != nil {
			return nil, err
		}
		r.servers[i].addr, addrs[i] = ap, ap
	}
	tr, err := newTransport(cfg.Sockets, addrs, cfg.Timeout, &r.stats)
	if err != nil {
		return nil, err
	}
	r.tr = tr
	if cfg.Now == nil {
		r.coarse = newCoarseClock()
	}
	return r, nil
}

// Close closes the resolver's sockets; lookups that miss the cache fail
// afterwards.
func (r *Resolver) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.tr.close()
	if r.coarse != nil {
		r.coarse.close()
	}
	return nil
}

// Servers returns the servers in the order they are tried.
func (r *Resolver) Servers() []netip.AddrPort {
	out := make([]netip.AddrPort, len(r.servers))
	for i := range r.servers {
		out[i] = r.servers[i].addr
	}
	return out
}

// ServerDown reports whether server i (in Servers order) is marked down.
func (r *Resolver) ServerDown(i int) bool { return r.servers[i].down(r.now()) }

// Stats returns the resolver's counters.
func (r *Resolver) Stats() Stats { return r.stats.snapshot() }

// CacheLen counts the live cache entries.
func (r *Resolver) CacheLen() int { return r.cache.len(r.now()) }

func (r *Resolver) now() int64 {
	if r.coarse != nil {
		return r.coarse.read()
	}
	return r.cfg.Now().UnixNano()
}

// Lookup returns the addresses of host, from the cache when it can.
func (r *Resolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return r.appendLookup(ctx, nil, stringBytes(host), host)
}

// AppendLookup appends the addresses of host to dst. A cache hit allocates
// nothing when dst has room for the addresses (MaxAddrs at most).
func (r *Resolver) AppendLookup(ctx context.Context, dst []netip.Addr, host string) ([]netip.Addr, error) {
	return r.appendLookup(ctx, dst, stringBytes(host), host)
}

// AppendLookupBytes is AppendLookup for a host name held in a byte slice.
func (r *Resolver) AppendLookupBytes(ctx context.Context, dst []netip.Addr, host []byte) ([]netip.Addr, error) {
	return r.appendLookup(ctx, dst, host, "")
}

// AppendCached appends the cached addresses of host to dst without going to
// the network; ok is false when the cache holds nothing live for host, and
// err is set when it holds a negative answer.
func (r *Resolver) AppendCached(dst []netip.Addr, host string) (_ []netip.Addr, ok bool, err error) {
	out, st, ok := r.cache.get(stringBytes(host), r.now(), dst)
	if !ok {
		return dst, false, nil
	}
	if st != statusOK {
		return dst, true, &LookupError{Name: host, Err: st.err(r.cfg.MaxCNAME), Cached: true}
	}
	return out, true, nil
}

// appendLookup serves key from the cache or resolves it. host is key as a
// string when the caller has one; "" makes the miss path convert key.
func (r *Resolver) appendLookup(ctx context.Context, dst []netip.Addr, key []byte, host string) ([]netip.Addr, error) {
	out, st, ok := r.cache.get(key, r.now(), dst)
	if ok {
		r.stats.Hits.Add(1)
		if st == statusOK {
			return out, nil
		}
		return dst, &LookupError{Name: string(key), Err: st.err(r.cfg.MaxCNAME), Cached: true}
	}
	if host == "" {
		host = string(key)
	}
	if a, err := netip.ParseAddr(trimBrackets(host)); err == nil {
		return append(dst, a.Unmap()), nil
	}
	name, err := CanonicalHost(host)
	if err != nil {
		return dst, &LookupError{Name: host, Err: err}
	}
	if r.closed.Load() {
		return dst, &LookupError{Name: name, Err: ErrClosed}
	}
	ans, err := r.flight.do(ctx, name, func() answer { return r.resolveAndCache(name) })
	if err != nil {
		return dst, &LookupError{Name: name, Err: err}
	}
	if ans.st != statusOK {
		return dst, &LookupError{Name: name, Err: ans.error(r.cfg.MaxCNAME)}
	}
	return append(dst, ans.addrs...), nil
}

func trimBrackets(s string) string {
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// Errors a lookup wraps in a *LookupError.
var (
	ErrNotFound      = errors.New("no such host (NXDOMAIN)")
	ErrNoAddress     = errors.New("host has no address of the asked family")
	ErrServerFailure = errors.New("server failure")
	ErrAllDown       = errors.New("every name server is marked down")
	ErrLookupTimeout = errors.New("lookup timed out")
	ErrCNAMELoop     = errors.New("CNAME chain loops")
	ErrCNAMETooLong  = errors.New("CNAME chain too long")
	ErrBadName       = errors.New("not a valid host name")
	ErrClosed        = errors.New("resolver closed")
)

// LookupError is the error of a failed lookup: which name, and why.
type LookupError struct {
	Name   string
	Err    error
	Cached bool // the failure came from the negative cache
}

func (e *LookupError) Error() string {
	s := "resolving " + e.Name + ": " + e.Err.Error()
	if e.Cached {
		s += " (cached)"
	}
	return s
}

func (e *LookupError) Unwrap() error { return e.Err }

// CanonicalHost returns host as the resolver looks it up: lower case,
// without a trailing dot. It fails (ErrBadName, saying what is wrong and
// where) unless host is a host name: labels of 1 to 63 letters, digits,
// '-' or '_', 253 bytes at most.
func CanonicalHost(host string) (string, error) {
	if n := len(host); n > 0 && host[n-1] == '.' {
		host = host[:n-1]
	}
	if len(host) == 0 {
		return "", fmt.Errorf("%w: empty", ErrBadName)
	}
	if len(host) > 253 {
		return "", fmt.Errorf("%w: %d bytes, more than 253", ErrBadName, len(host))
	}
	lower := true
	label := 0
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '.':
			if label == 0 {
				return "", fmt.Errorf("%w: empty label at byte %d", ErrBadName, i)
			}
			label = 0
			continue
		case 'A' <= c && c <= 'Z':
			lower = false
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case c >= 0x80: // a UTF-8 name not in its A-label (xn--) form
			return "", fmt.Errorf("%w: non-ASCII byte %#x at %d", ErrBadName, c, i)
		default:
			return "", fmt.Errorf("%w: byte %q at %d", ErrBadName, c, i)
		}
		label++
		if label > 63 {
			return "", fmt.Errorf("%w: label of more than 63 bytes at byte %d", ErrBadName, i-63)
		}
	}
	if label == 0 {
		return "", fmt.Errorf("%w: empty label at byte %d", ErrBadName, len(host))
	}
	if !lower {
		b := []byte(host)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		host = string(b)
	}
	return host, nil
}
