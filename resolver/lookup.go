package resolver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// answer is the outcome of resolving one name: what the cache stores, plus
// the detailed error of a failure (the cache keeps only its status).
type answer struct {
	st    status
	addrs []netip.Addr
	ttl   time.Duration // 0: use the configured negative TTL for st
	err   error
}

func (st status) err(maxCNAME int) error {
	switch st {
	case statusNXDomain:
		return ErrNotFound
	case statusNoData:
		return ErrNoAddress
	case statusCNAMELoop:
		return ErrCNAMELoop
	case statusCNAMETooLong:
		return fmt.Errorf("%w (more than %d links)", ErrCNAMETooLong, maxCNAME)
	default:
		return ErrServerFailure
	}
}

func (a answer) error(maxCNAME int) error {
	if a.err != nil {
		return a.err
	}
	return a.st.err(maxCNAME)
}

// resolveAndCache resolves name (canonical) and caches the outcome.
func (r *Resolver) resolveAndCache(name string) answer {
	r.stats.Lookups.Add(1)
	// Detached from the callers' contexts: others may share this flight.
	// Bounded as a whole: each query's Timeout alone let a server that
	// answers just in time, link after link of a CNAME chain and server
	// after server, hold the flight for (MaxCNAME+1) × servers × 2 (UDP,
	// then TCP) × Timeout, 72 s with two servers, every caller waiting
	// as long as its context let it and every later one joining.
	ctx, cancel := context.WithTimeoutCause(context.Background(), r.cfg.LookupTimeout, r.overdue)
	defer cancel()
	var a answer
	switch r.cfg.Network {
	case "ip4":
		a = r.queryChain(ctx, name, dns.TypeA)
	case "ip6":
		a = r.queryChain(ctx, name, dns.TypeAAAA)
	default:
		six := make(chan answer, 1)
		go func() { six <- r.queryChain(ctx, name, dns.TypeAAAA) }()
		a = merge(r.queryChain(ctx, name, dns.TypeA), <-six)
	}
	if len(a.addrs) > MaxAddrs {
		// What the cache keeps, so that a miss returns what the hits
		// that follow it will, not the thousand addresses one answer may
		// carry, copied for every caller sharing the flight.
		a.addrs = slices.Clone(a.addrs[:MaxAddrs])
	}
	var ttl time.Duration
	switch a.st {
	case statusOK:
		ttl = min(max(a.ttl, r.cfg.MinTTL), r.cfg.MaxTTL)
	case statusNXDomain, statusNoData:
		ttl = r.cfg.NegativeTTL
	default:
		ttl = r.cfg.ServFailTTL
	}
	now := r.now()
	r.cache.put(name, a.st, a.addrs, now+int64(ttl), now)
	return a
}

// merge combines the A and AAAA outcomes of one name: any address wins,
// then a failure (so it is retried soon), then NXDOMAIN only if both say so.
func merge(a4, a6 answer) answer {
	switch {
	case a4.st == statusOK && a6.st == statusOK:
		return answer{st: statusOK, addrs: interleave(a4.addrs, a6.addrs), ttl: min(a4.ttl, a6.ttl)}
	case a4.st == statusOK:
		return a4
	case a6.st == statusOK:
		return a6
	case a4.st == statusNXDomain && a6.st == statusNXDomain:
		return a4
	case a4.st == statusNoData || a4.st == statusNXDomain:
		if a6.st == statusNoData || a6.st == statusNXDomain {
			return answer{st: statusNoData}
		}
		return a6
	default:
		return a4
	}
}

// interleave alternates IPv4 and IPv6 addresses, IPv4 first, so that an
// entry truncated to MaxAddrs keeps both families.
func interleave(v4, v6 []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(v4)+len(v6))
	for i := 0; i < len(v4) || i < len(v6); i++ {
		if i < len(v4) {
			out = append(out, v4[i])
		}
		if i < len(v6) {
			out = append(out, v6[i])
		}
	}
	return out
}

// queryChain resolves name for qtype, following CNAME links within an
// answer and across queries, at most MaxCNAME of them, refusing loops.
// Only records on the chain from name are believed; anything else in an
// answer is ignored.
func (r *Resolver) queryChain(ctx context.Context, name string, qtype uint16) answer {
	target := dns.Fqdn(name)
	c := newChain(target, qtype, r.cfg.MaxCNAME)
	for {
		m, err := r.exchangeAny(ctx, target, qtype)
		if err != nil {
			return answer{st: statusServFail, err: err}
		}
		if m.Rcode == dns.RcodeNameError {
			return answer{st: statusNXDomain}
		}
		a, next, done := c.walk(m.Answer, target)
		if done {
			return a
		}
		target = next // the chain leaves this answer: ask for its end
	}
}

// chain is the state of following one name's CNAME chain for one type.
type chain struct {
	qtype uint16
	max   int             // links allowed
	seen  map[string]bool // names on the chain, canonical and fully qualified
	links int
	ttl   time.Duration // lowest TTL on the chain so far; -1: none yet
}

func newChain(start string, qtype uint16, max int) *chain {
	return &chain{qtype: qtype, max: max, seen: map[string]bool{start: true}, ttl: -1}
}

func (c *chain) lower(d time.Duration) {
	if c.ttl < 0 || d < c.ttl {
		c.ttl = d
	}
}

// walk follows the chain from target (canonical, fully qualified) through
// the records of one answer. It returns the outcome and done, or the name
// the chain continues at, which the answer does not resolve.
func (c *chain) walk(rrs []dns.RR, target string) (_ answer, next string, done bool) {
	cnames := map[string]*dns.CNAME{}
	for _, rr := range rrs {
		if cn, ok := rr.(*dns.CNAME); ok && cn.Hdr.Class == dns.ClassINET {
			cnames[canonicalFqdn(cn.Hdr.Name)] = cn
		}
	}
	cur := target
	for {
		var addrs []netip.Addr
		curTTL := time.Duration(-1)
		for _, rr := range rrs {
			h := rr.Header()
			if h.Rrtype != c.qtype || h.Class != dns.ClassINET || !equalFqdn(h.Name, cur) {
				continue
			}
			var a netip.Addr
			switch v := rr.(type) {
			case *dns.A:
				a, _ = netip.AddrFromSlice(v.A.To4())
			case *dns.AAAA:
				if ip := v.AAAA.To16(); ip != nil && ip.To4() == nil {
					a, _ = netip.AddrFromSlice(ip)
				}
			}
			if !a.IsValid() {
				continue
			}
			addrs = append(addrs, a)
			d := ttlOf(h)
			if curTTL < 0 || d < curTTL {
				curTTL = d
			}
		}
		if len(addrs) > 0 {
			c.lower(curTTL)
			return answer{st: statusOK, addrs: addrs, ttl: c.ttl}, "", true
		}
		cn, ok := cnames[cur]
		if !ok {
			break
		}
		nxt := canonicalFqdn(cn.Target)
		if c.seen[nxt] {
			return answer{st: statusCNAMELoop, err: fmt.Errorf("%w at %s", ErrCNAMELoop, nxt)}, "", true
		}
		c.links++
		if c.links > c.max {
			return answer{st: statusCNAMETooLong}, "", true
		}
		c.seen[nxt] = true
		c.lower(ttlOf(&cn.Hdr))
		cur = nxt
	}
	if cur == target {
		return answer{st: statusNoData}, "", true
	}
	return answer{}, cur, false
}

// ttlOf is h's TTL. One with the high bit set is zero (RFC 2181 section
// 8): taken as it stood, a server's 0xffffffff, meant as "do not cache" or
// damaged, kept its answer for MaxTTL.
func ttlOf(h *dns.RR_Header) time.Duration {
	if h.Ttl > math.MaxInt32 {
		return 0
	}
	return time.Duration(h.Ttl) * time.Second
}

func canonicalFqdn(s string) string { return dns.CanonicalName(s) }

func equalFqdn(a, b string) bool { return len(a) == len(b) && dns.CanonicalName(a) == b }

// exchangeAny sends the query to the servers in order, skipping those marked
// down, until one answers NOERROR or NXDOMAIN.
func (r *Resolver) exchangeAny(ctx context.Context, qname string, qtype uint16) (*dns.Msg, error) {
	downFor := int64(r.cfg.DownFor)
	var lastErr error
	tried := 0
	for i := range r.servers {
		s := &r.servers[i]
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if !s.usable(r.now(), downFor) {
			continue
		}
		tried++
		sent := r.now()
		m, err := r.tr.exchange(ctx, s.addr, qname, qtype)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if errors.Is(err, errBusy) {
				return nil, err // the sockets are every server's
			}
			// A reply to another query since this one was sent means the
			// server is alive and only this datagram was lost.
			if errors.Is(err, errTimeout) && s.lastAnswer.Load() < sent {
				s.markDown(r.now(), downFor)
				r.stats.ServersDown.Add(1)
			}
			lastErr = err
			continue
		}
		s.lastAnswer.Store(r.now())
		s.markUp()
		switch m.Rcode {
		case dns.RcodeSuccess, dns.RcodeNameError:
			return m, nil
		}
		lastErr = fmt.Errorf("%w: %s answered %s", ErrServerFailure, s.addr, dns.RcodeToString[m.Rcode])
	}
	if tried == 0 {
		return nil, ErrAllDown
	}
	return nil, lastErr
}
