package scope

import (
	"fmt"
	"strings"
)

// domainKind is how a domain rule matches relative to its domain.
type domainKind uint8

const (
	matchExact   domainKind = 1 << iota // the host itself ("th.ac.ku")
	matchStrict                         // hosts strictly under it ("th.ac.+")
	matchSubtree = matchExact | matchStrict
)

// DomainRules is a compiled set of domain rules (see the package doc).
type DomainRules struct {
	pos, neg      map[string]domainKind // forward-order domain -> how it matches
	anyPos, anyNe bool                  // "*" / "-*"
}

// ParseDomainRules compiles domain rules such as "th.ac.*", "th.ac.+",
// "th.ac.ku" and "-th.ac.ku.cs.*".
func ParseDomainRules(rules []string) (*DomainRules, error) {
	d := &DomainRules{pos: map[string]domainKind{}, neg: map[string]domainKind{}}
	for _, r := range rules {
		orig := r
		r = strings.ToLower(strings.TrimSpace(r))
		neg := strings.HasPrefix(r, "-")
		if neg {
			r = r[1:]
		}
		m := d.pos
		if neg {
			m = d.neg
		}
		if r == "*" {
			if neg {
				d.anyNe = true
			} else {
				d.anyPos = true
			}
			continue
		}
		kind := matchExact
		switch {
		case strings.HasSuffix(r, ".*"):
			kind, r = matchSubtree, r[:len(r)-2]
		case strings.HasSuffix(r, ".+"):
			kind, r = matchStrict, r[:len(r)-2]
		}
		labels := strings.Split(r, ".")
		for _, l := range labels {
			if l == "" || strings.ContainsAny(l, "*+/:?#@[] \t") {
				return nil, fmt.Errorf("scope: domain rule %q: bad label %q (want e.g. th.ac.*, th.ac.+, th.ac.ku, -th.ac.ku.*)", orig, l)
			}
		}
		for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
			labels[i], labels[j] = labels[j], labels[i]
		}
		m[strings.Join(labels, ".")] |= kind
	}
	return d, nil
}

// Empty reports whether there are no positive and no negative rules.
func (d *DomainRules) Empty() bool {
	return d == nil || len(d.pos) == 0 && len(d.neg) == 0 && !d.anyPos && !d.anyNe
}

// Match reports how host (lower case, no port) fares: OK, OutOfDomain (no
// positive rule matched while some exist) or Excluded (a negative rule matched).
func (d *DomainRules) Match(host string) Reason {
	if d == nil {
		return OK
	}
	if d.anyNe || matches(d.neg, host) {
		return Excluded
	}
	if len(d.pos) == 0 && !d.anyPos {
		return OK
	}
	if d.anyPos || matches(d.pos, host) {
		return OK
	}
	return OutOfDomain
}

// matches looks host and each of its parent domains up in m.
func matches(m map[string]domainKind, host string) bool {
	if len(m) == 0 {
		return false
	}
	if m[host]&matchExact != 0 {
		return true
	}
	for i := 0; i < len(host); i++ {
		if host[i] == '.' && m[host[i+1:]]&matchStrict != 0 {
			return true
		}
	}
	return false
}
