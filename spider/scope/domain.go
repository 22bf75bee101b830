package scope

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kspider/kspider/spider/urlnorm"
)

// domainKind says how the rules on one domain match: bits for the domain
// itself and for hosts strictly under it, for positive and negative rules.
type domainKind uint8

const (
	posExact  domainKind = 1 << iota // "th.ac.ku"
	posStrict                        // "th.ac.+"
	negExact                         // "-th.ac.ku"
	negStrict                        // "-th.ac.ku.+"
)

// DomainRules is a compiled set of domain rules (see the package doc). One
// map holds positive and negative rules, keyed by domain in normal (not
// reversed) order, so a host costs one lookup per label.
type DomainRules struct {
	rules          map[string]domainKind
	hasPos         bool
	anyPos, anyNeg bool // "*" / "-*"
}

// ParseDomainRules compiles domain rules such as "th.ac.*", "th.ac.+",
// "th.ac.ku" and "-th.ac.ku.cs.*". Labels may be Unicode ("ไทย.*"):
// they are matched as the A-labels canonical URLs hold.
func ParseDomainRules(rules []string) (*DomainRules, error) {
	d := &DomainRules{rules: map[string]domainKind{}}
	for _, r := range rules {
		orig := r
		r = strings.ToLower(strings.TrimSpace(r))
		neg := strings.HasPrefix(r, "-")
		if neg {
			r = r[1:]
		}
		if r == "*" {
			if neg {
				d.anyNeg = true
			} else {
				d.anyPos = true
			}
			continue
		}
		exact, strict := posExact, posStrict
		if neg {
			exact, strict = negExact, negStrict
		} else {
			d.hasPos = true
		}
		kind := exact
		switch {
		case strings.HasSuffix(r, ".*"):
			kind, r = exact|strict, r[:len(r)-2]
		case strings.HasSuffix(r, ".+"):
			kind, r = strict, r[:len(r)-2]
		}
		labels := strings.Split(r, ".")
		for _, l := range labels {
			if l == "" || strings.ContainsAny(l, "*+/:?#@[] \t") {
				return nil, fmt.Errorf("scope: domain rule %q: bad label %q (want e.g. th.ac.*, th.ac.+, th.ac.ku, -th.ac.ku.*)", orig, l)
			}
		}
		slices.Reverse(labels)
		domain := strings.Join(labels, ".")
		if !isASCII(domain) {
			// Canonical URLs carry A-labels ("xn--o3cw4h"): a rule
			// written in Unicode ("ไทย.*") would never match.
			a, err := urlnorm.ASCIIHost(domain)
			if err != nil {
				return nil, fmt.Errorf("scope: domain rule %q: %v", orig, err)
			}
			domain = a
		}
		d.rules[domain] |= kind
	}
	return d, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Empty reports whether there are no positive and no negative rules.
func (d *DomainRules) Empty() bool {
	return d == nil || len(d.rules) == 0 && !d.anyPos && !d.anyNeg
}

// Match reports how host (lower case, no port; trailing dots ignored) fares:
// OK, OutOfDomain (no positive rule matched while some exist) or Excluded
// (a negative rule matched).
func (d *DomainRules) Match(host string) Reason {
	if d == nil {
		return OK
	}
	if d.anyNeg {
		return Excluded
	}
	// "example.com." is example.com to DNS: a link naming a host with the
	// trailing dots of a fully qualified name must meet the host's rules,
	// or "-com.example.*" would not keep the crawl out of it.
	host = strings.TrimRight(host, ".")
	var pos bool
	if len(d.rules) > 0 {
		k := d.rules[host]
		if k&negExact != 0 {
			return Excluded
		}
		pos = k&posExact != 0
		for i := 0; i < len(host); i++ {
			if host[i] != '.' {
				continue
			}
			k := d.rules[host[i+1:]]
			if k&negStrict != 0 {
				return Excluded
			}
			pos = pos || k&posStrict != 0
		}
	}
	if pos || d.anyPos || !d.hasPos {
		return OK
	}
	return OutOfDomain
}
