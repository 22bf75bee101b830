package resolver

import (
	"context"
	"testing"
	"time"
)

// TestTTLHighBitIsZero: a TTL with its high bit set (2^31 s and more) was
// taken for a long one and cached up to MaxTTL, an hour, where RFC 2181
// section 8 has it read as zero: a server sending 0xffffffff for "do not
// cache" (or a damaged one) kept its answer an hour. Now it is zero, raised
// to MinTTL, on an address record and on a CNAME link alike; 2^31 - 1 is
// still the longest TTL, capped at MaxTTL.
func TestTTLHighBitIsZero(t *testing.T) {
	srv := startServer(t, zone(t, map[string][]string{
		"high.test":   {"2147483648 IN A 192.0.2.1"},
		"all.test":    {"4294967295 IN A 192.0.2.2"},
		"alias.test":  {"4294967295 IN CNAME target.test."},
		"target.test": {"3600 IN A 192.0.2.3"},
		"max.test":    {"2147483647 IN A 192.0.2.4"},
	}))
	clk := newFakeClock()
	r := newTestResolver(t, Config{Network: "ip4", Now: clk.Now, MinTTL: 10 * time.Second, MaxTTL: time.Hour}, srv.addr)
	names := []string{"high.test", "all.test", "alias.test", "max.test"}
	for _, h := range names {
		if _, err := r.Lookup(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(11 * time.Second)
	for _, h := range names {
		_, live, _ := r.AppendCached(nil, h)
		if want := h == "max.test"; live != want {
			t.Errorf("%s 11 s after its lookup (MinTTL 10 s): cached %v, want %v", h, live, want)
		}
	}
}
