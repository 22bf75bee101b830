package resolver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestLookupBounded: two servers on loopback each answer every query just
// within Timeout, the first SERVFAIL and the second one more link of a
// CNAME chain of MaxCNAME links. Each query's Timeout alone let the lookup
// run on for (MaxCNAME+1) × 2 slow answers, whatever its callers' contexts;
// now the whole lookup ends at LookupTimeout, saying so.
func TestLookupBounded(t *testing.T) {
	const slow = 150 * time.Millisecond
	const links = 8
	failing := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		time.Sleep(slow)
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeServerFailure)
		w.WriteMsg(m)
	})
	records := map[string][]string{fmt.Sprintf("l%d.test", links): {"60 IN A 192.0.2.7"}}
	for i := range links {
		records[fmt.Sprintf("l%d.test", i)] = []string{fmt.Sprintf("60 IN CNAME l%d.test.", i+1)}
	}
	inner := zone(t, records)
	chain := startServer(t, func(w dns.ResponseWriter, q *dns.Msg) {
		time.Sleep(slow)
		inner(w, q)
	})
	const bound = 600 * time.Millisecond
	r := newTestResolver(t, Config{Network: "ip4", Timeout: time.Second, LookupTimeout: bound, MaxCNAME: links}, failing.addr, chain.addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.Lookup(ctx, "l0.test")
	asked := failing.total() + chain.total()
	if !errors.Is(err, ErrLookupTimeout) || !strings.Contains(err.Error(), "l0.test") || !strings.Contains(err.Error(), bound.String()) {
		t.Fatalf("a lookup of %d slow answers in a row: %v (after %d queries); want ErrLookupTimeout naming l0.test and %v", 2*(links+1), err, asked, bound)
	}
	if asked >= 2*(links+1) {
		t.Errorf("the servers were asked %d times, the whole chain: the lookup was not cut at its bound", asked)
	}
	if r.ServerDown(0) || r.ServerDown(1) {
		t.Error("a server that answered was marked down by the lookup's bound")
	}
}
