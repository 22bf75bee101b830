package resolver

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

// TestDnsmasq resolves against a real dnsmasq that knows only a hosts file.
func TestDnsmasq(t *testing.T) {
	hosts := writeHosts(t,
		"127.0.0.10 one.kspider.test",
		"127.0.0.11 two.kspider.test",
		"127.0.0.12 two.kspider.test",
		"::1 six.kspider.test",
		"127.0.0.13 Mixed.Kspider.Test",
	)
	srv := startDnsmasq(t, hosts, "kspider.test")
	r := newTestResolver(t, Config{}, srv)
	ctx := context.Background()

	for _, tc := range []struct {
		host string
		want []string
	}{
		{"one.kspider.test", []string{"127.0.0.10"}},
		{"ONE.kspider.test.", []string{"127.0.0.10"}},
		{"two.kspider.test", []string{"127.0.0.11", "127.0.0.12"}},
		{"six.kspider.test", []string{"::1"}},
		{"mixed.kspider.test", []string{"127.0.0.13"}},
	} {
		got, err := r.Lookup(ctx, tc.host)
		if err != nil {
			t.Errorf("Lookup(%q): %v", tc.host, err)
			continue
		}
		var s []string
		for _, a := range got {
			s = append(s, a.String())
		}
		slices.Sort(s)
		if !slices.Equal(s, tc.want) {
			t.Errorf("Lookup(%q) = %v, want %v", tc.host, s, tc.want)
		}
	}

	_, err := r.Lookup(ctx, "missing.kspider.test")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing name: err = %v, want ErrNotFound", err)
	}
	queries, hits := r.Stats().Queries, r.Stats().Hits
	// Everything is cached now, positively and negatively.
	for _, h := range []string{"one.kspider.test", "two.kspider.test", "missing.kspider.test"} {
		r.Lookup(ctx, h)
	}
	if q := r.Stats().Queries; q != queries {
		t.Errorf("cached lookups sent %d queries", q-queries)
	}
	if h := r.Stats().Hits; h != hits+3 {
		t.Errorf("3 cached lookups counted %d cache hits", h-hits)
	}
	_, err = r.Lookup(ctx, "missing.kspider.test")
	var le *LookupError
	if !errors.As(err, &le) || !le.Cached {
		t.Errorf("second lookup of a missing name: %v, want a cached LookupError", err)
	}
	if st := r.Stats(); st.Rejected() != 0 || st.Timeouts != 0 {
		t.Errorf("stats against a well-behaved server: %+v", st)
	}

	// Prefetch warms the cache in the background.
	r2 := newTestResolver(t, Config{Network: "ip4"}, srv)
	res := <-r2.Prefetch(ctx, []string{"one.kspider.test", "two.kspider.test", "missing.kspider.test", "bad name"})
	if res.Resolved != 2 || res.Failed != 2 || res.Hosts != 4 {
		t.Errorf("Prefetch = %+v", res)
	}
	dst := make([]netip.Addr, 0, MaxAddrs)
	if got, ok, err := r2.AppendCached(dst, "one.kspider.test"); !ok || err != nil || len(got) != 1 {
		t.Errorf("after Prefetch: AppendCached = %v, %v, %v", got, ok, err)
	}
}
