package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/kspider/kspider/resolver"
)

// probeDNS resolves the first seed's host name once before the crawl
// starts: when no DNS server answers at all, every fetch would fail and be
// retried for minutes, so the run stops at once saying which servers were
// asked. Any answer (NXDOMAIN included) will do.
func probeDNS(ctx context.Context, res *resolver.Resolver, servers []string, seeds []string) error {
	var name string
	for _, s := range seeds {
		if u, err := url.Parse(s); err == nil && u.Hostname() != "" && !strings.ContainsAny(u.Hostname(), ":") && !isIPv4(u.Hostname()) {
			name = u.Hostname()
			break
		}
	}
	if name == "" {
		return nil
	}
	probe, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := res.Lookup(probe, name)
	switch {
	case ctx.Err() != nil:
		return nil // interrupted: the node says so
	case err == nil, errors.Is(err, resolver.ErrNotFound), errors.Is(err, resolver.ErrNoAddress),
		errors.Is(err, resolver.ErrBadName), errors.Is(err, resolver.ErrCNAMELoop), errors.Is(err, resolver.ErrCNAMETooLong):
		return nil
	}
	which := "the system's DNS servers"
	if len(servers) > 0 {
		which = "dns_servers " + strings.Join(servers, ", ")
	}
	return fmt.Errorf("DNS: no answer from %s (resolving %s, the first seed's host: %v); check dns_servers", which, name, err)
}

func isIPv4(h string) bool {
	dots := 0
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '.':
			dots++
		case c < '0' || c > '9':
			return false
		}
	}
	return dots == 3
}
