package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider/urlnorm"
)

// serverList collects a repeated, comma-separated flag of servers: the
// DNS servers of resolve and fetch (--server), the NTP servers of clock
// (--ntp).
type serverList []string

func (s *serverList) String() string { return strings.Join(*s, ",") }

// Set refuses a value that names no server: --server "$DNS" with DNS unset
// would otherwise leave the list empty, and the resolver would quietly ask
// the servers of /etc/resolv.conf instead of the one meant.
func (s *serverList) Set(v string) error {
	n := len(*s)
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	if len(*s) == n {
		return fmt.Errorf("%q names no server", v)
	}
	return nil
}

// runResolve resolves names with kspider's own resolver, like a small dig.
func runResolve(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "resolve", "resolve [--server ADDR]... NAME...",
		`Resolves host names with kspider's own resolver (never the C library) and
prints one line per name: the name and its addresses, or the error. The
servers are those of /etc/resolv.conf unless --server is given. Names are
resolved in parallel; the exit status is 1 if any failed.`)
	var servers serverList
	fs.Var(&servers, "server", "name server `ADDR` (ip or ip:port); repeatable, tried in order")
	network := fs.String("network", "ip", "address families: ip4 (A), ip6 (AAAA) or ip (both)")
	timeout := fs.Duration("timeout", 2*time.Second, "per-query timeout")
	verbose := fs.Bool("v", false, "also print the resolver's counters")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 {
		return usagef("no names given")
	}
	switch *network {
	case "ip", "ip4", "ip6":
	default:
		return usagef("--network %q is not ip, ip4 or ip6", *network)
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	r, err := resolver.New(resolver.Config{Servers: servers, Network: *network, Timeout: *timeout})
	if err != nil {
		return err
	}
	defer r.Close()

	lines := make([]string, len(names))
	failed := make([]bool, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			host := name
			if !isASCII(name) {
				// Looked up as a crawl would: its A-labels ("xn--").
				a, err := urlnorm.ASCIIHost(name)
				if err != nil {
					failed[i] = true
					lines[i] = fmt.Sprintf("%s\terror: not a host name: %v", name, err)
					return
				}
				host, name = a, name+" ("+a+")"
			}
			addrs, err := r.Lookup(ctx, host)
			took := time.Since(start).Round(time.Microsecond)
			if err != nil {
				failed[i] = true
				lines[i] = fmt.Sprintf("%s\terror: %v\t(%v)", name, resolveErrorText(err), took)
				return
			}
			s := make([]string, len(addrs))
			for j, a := range addrs {
				s[j] = a.String()
			}
			lines[i] = fmt.Sprintf("%s\t%s\t(%v)", name, strings.Join(s, " "), took)
		}()
	}
	wg.Wait()
	nfail := 0
	// Written through one buffer whose error is checked: a full disk under
	// "> file" lost the answers and still exited 0.
	w := bufio.NewWriter(e.stdout)
	for i, l := range lines {
		fmt.Fprintln(w, l)
		if failed[i] {
			nfail++
		}
	}
	if *verbose {
		st := r.Stats()
		fmt.Fprintf(w, ";; servers %v; %d queries, %d timeouts, %d TCP fallbacks, %d replies rejected\n",
			r.Servers(), st.Queries, st.Timeouts, st.TCPFallbacks, st.Rejected())
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the answers: %w", err)
	}
	if nfail > 0 {
		return fmt.Errorf("%d of %d names did not resolve", nfail, len(names))
	}
	return nil
}

// resolveErrorText drops the "resolving NAME: " prefix the line already
// shows.
func resolveErrorText(err error) string {
	var le *resolver.LookupError
	if errors.As(err, &le) {
		s := le.Err.Error()
		if le.Cached {
			s += " (cached)"
		}
		return s
	}
	return err.Error()
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
