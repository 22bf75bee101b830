package scope

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"

	"golang.org/x/net/publicsuffix"
)

// Config is what an operator sets. Zero limits mean "no limit"; Default
// returns the values a node starts from.
type Config struct {
	Include []string // regular expressions on the URL; if any, one must match
	Exclude []string // regular expressions on the URL; none may match
	Domains []string // domain rules (see the package doc)

	MaxURLLength     int  // bytes
	MaxPathDepth     int  // path segments ("/a/b/" has 2)
	MaxSegmentRepeat int  // occurrences of one path segment that make a loop
	RejectQuery      bool // refuse every URL with a query (thesis: "?")
	RejectCGI        bool // refuse paths ending in .cgi or under /cgi-bin/
	// Budgets, kept by the node in its scheduler's persistent host table
	// (the Filter itself keeps no per-host state).
	MaxPagesPerHost int // URLs admitted per host (origin)
	MaxSubdomains   int // hosts (origins) admitted per registrable domain
}

// Default returns a configuration with the trap limits on and no scope rules.
func Default() Config {
	return Config{
		MaxURLLength:     2048,
		MaxPathDepth:     32,
		MaxSegmentRepeat: 3,
		MaxPagesPerHost:  1_000_000,
		MaxSubdomains:    1000,
	}
}

// Filter applies a Config's rules. Check is pure; Admit also counts
// reasons. The budgets (MaxPagesPerHost, MaxSubdomains) need per-host state
// that must survive restarts, so the node keeps them (spider's budgets, in
// the scheduler's host table). A Filter is safe for concurrent use.
type Filter struct {
	c       Config
	include []*regexp.Regexp
	exclude []*regexp.Regexp
	domains *DomainRules

	counts [NumReasons]atomic.Uint64
}

// New compiles a Config.
func New(c Config) (*Filter, error) {
	f := &Filter{c: c}
	for _, list := range []struct {
		src  []string
		dst  *[]*regexp.Regexp
		what string
	}{{c.Include, &f.include, "include"}, {c.Exclude, &f.exclude, "exclude"}} {
		for _, s := range list.src {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("scope: %s expression %q: %w", list.what, s, err)
			}
			*list.dst = append(*list.dst, re)
		}
	}
	d, err := ParseDomainRules(c.Domains)
	if err != nil {
		return nil, err
	}
	if !d.Empty() {
		f.domains = d
	}
	return f, nil
}

// Check applies the rules that need no state: URL shape, include/exclude,
// domain rules and traps. It allocates nothing beyond what the operator's
// regular expressions need.
func (f *Filter) Check(u string) Reason {
	if f.c.MaxURLLength > 0 && len(u) > f.c.MaxURLLength {
		return TooLong
	}
	p, ok := splitURL(u)
	if !ok {
		return BadURL
	}
	for _, re := range f.exclude {
		if re.MatchString(u) {
			return Excluded
		}
	}
	if r := f.domains.Match(p.host); r != OK {
		return r
	}
	if len(f.include) > 0 {
		in := false
		for _, re := range f.include {
			if re.MatchString(u) {
				in = true
				break
			}
		}
		if !in {
			return NotIncluded
		}
	}
	if f.c.RejectQuery && p.hasQ {
		return CGI
	}
	if f.c.RejectCGI && isCGI(p.path) {
		return CGI
	}
	return pathTraps(p.path, f.c.MaxPathDepth, f.c.MaxSegmentRepeat)
}

// Admit is Check, with the outcome counted: to be called once per new URL
// the node would add.
func (f *Filter) Admit(u string) Reason {
	r := f.Check(u)
	f.counts[r].Add(1)
	return r
}

// Count records a rejection decided elsewhere (the depth limit, say) in the
// filter's counters.
func (f *Filter) Count(r Reason) {
	if r < NumReasons {
		f.counts[r].Add(1)
	}
}

// Counts returns the number of Admit outcomes per reason (OK included).
func (f *Filter) Counts() [NumReasons]uint64 {
	var out [NumReasons]uint64
	for i := range out {
		out[i] = f.counts[i].Load()
	}
	return out
}

// registrable returns the registrable domain of host (eTLD+1), or the host
// itself for IP addresses, public suffixes and single labels. Trailing dots
// (a fully qualified name, "a.example.com.") go first: publicsuffix refuses
// them, and each such host would be a domain of its own, out of reach of
// the subdomain limit that stops wildcard DNS.
func registrable(host string) string {
	if strings.HasPrefix(host, "[") || isIPv4(host) {
		return host
	}
	if h := strings.TrimRight(host, "."); h != "" {
		host = h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// Registrable is the registrable domain (eTLD+1) of a host, as the
// subdomain limit counts them; "a.example.com." is under "example.com".
func Registrable(host string) string { return registrable(strings.ToLower(host)) }

func isIPv4(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
