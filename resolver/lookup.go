package resolver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
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
	ctx := context.Background()
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
		return answer{st: statusOK, addrs: append(a4.addrs, a6.addrs...), ttl: min(a4.ttl, a6.ttl)}
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

// queryChain resolves name for qtype, following CNAME links within an
// answer and across queries, at most MaxCNAME of them, refusing loops.
// Only records on the chain from name are believed; anything else in an
// answer is ignored.
func (r *Resolver) queryChain(ctx context.Context, name string, qtype uint16) answer {
	target := dns.Fqdn(name)
	seen := map[string]bool{target: true}
	links := 0
	ttl := time.Duration(-1)
	lower := func(d time.Duration) {
		if ttl < 0 || d < ttl {
			ttl = d
		}
	}
	for {
		m, err := r.exchangeAny(ctx, target, qtype)
		if err != nil {
			return answer{st: statusServFail, err: err}
		}
		if m.Rcode == dns.RcodeNameError {
			return answer{st: statusNXDomain}
		}
		var addrs []netip.Addr
		cnames := map[string]*dns.CNAME{}
		for _, rr := range m.Answer {
			if rr.Header().Class != dns.ClassINET {
				continue
			}
			if c, ok := rr.(*dns.CNAME); ok {
				cnames[canonicalFqdn(c.Hdr.Name)] = c
			}
		}
		cur := target
		for {
			var curTTL time.Duration = -1
			for _, rr := range m.Answer {
				h := rr.Header()
				if h.Rrtype != qtype || !equalFqdn(h.Name, cur) {
					continue
				}
				var a netip.Addr
				switch v := rr.(type) {
				case *dns.A:
					a, _ = netip.AddrFromSlice(v.A.To4())
				case *dns.AAAA:
					a, _ = netip.AddrFromSlice(v.AAAA.To16())
				}
				if !a.IsValid() {
					continue
				}
				addrs = append(addrs, a)
				d := time.Duration(h.Ttl) * time.Second
				if curTTL < 0 || d < curTTL {
					curTTL = d
				}
			}
			if len(addrs) > 0 {
				lower(curTTL)
				return answer{st: statusOK, addrs: addrs, ttl: ttl}
			}
			c, ok := cnames[cur]
			if !ok {
				break
			}
			next := canonicalFqdn(c.Target)
			if seen[next] {
				return answer{st: statusCNAMELoop, err: fmt.Errorf("%w at %s", ErrCNAMELoop, next)}
			}
			links++
			if links > r.cfg.MaxCNAME {
				return answer{st: statusCNAMETooLong}
			}
			seen[next] = true
			lower(time.Duration(c.Hdr.Ttl) * time.Second)
			cur = next
		}
		if cur == target {
			return answer{st: statusNoData}
		}
		target = cur // the chain leaves this answer: ask for its end
	}
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
		if !s.usable(r.now(), downFor) {
			continue
		}
		tried++
		sent := r.now()
		m, err := r.tr.exchange(ctx, s.addr, qname, qtype)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
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
