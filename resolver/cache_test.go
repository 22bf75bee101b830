package resolver

import (
	"context"
	"net/netip"
	"testing"
)

func TestCacheFIFO(t *testing.T) {
	c := newCache(1, 2)
	a := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	c.put("a.test", statusOK, a, 100)
	c.put("b.test", statusOK, a, 100)
	c.put("a.test", statusOK, a, 200) // refresh in place: not a new slot
	c.put("c.test", statusOK, a, 100) // evicts the oldest slot: a.test
	for name, want := range map[string]bool{"a.test": false, "b.test": true, "c.test": true} {
		if _, _, ok := cacheGet(c, name, 50, nil); ok != want {
			t.Errorf("%s cached = %v, want %v", name, ok, want)
		}
	}
	if _, _, ok := cacheGet(c, "b.test", 100, nil); ok {
		t.Error("entry still live at its expiry time")
	}
}

func TestCacheKeyFolding(t *testing.T) {
	c := newCache(16, 4)
	c.put("www.example.org", statusOK, []netip.Addr{netip.MustParseAddr("192.0.2.1")}, 10)
	for _, k := range []string{"www.example.org", "WWW.Example.ORG", "www.example.org."} {
		if got, st, ok := cacheGet(c, k, 0, nil); !ok || st != statusOK || len(got) != 1 {
			t.Errorf("cacheGet(%q) = %v %v %v", k, got, st, ok)
		}
		if _, _, ok := cacheGet(c, []byte(k), 0, nil); !ok {
			t.Errorf("cacheGet([]byte %q) missed", k)
		}
	}
	for _, k := range []string{"www.example.or", "ww.example.org", "www.example.org..", ""} {
		if _, _, ok := cacheGet(c, k, 0, nil); ok {
			t.Errorf("cacheGet(%q) hit", k)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "a_b.test": "a_b.test", "x": "x",
	} {
		if got, err := canonicalHost(in); err != nil || got != want {
			t.Errorf("canonicalHost(%q) = %q, %v", in, got, err)
		}
	}
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'a'
	}
	for _, in := range []string{"", ".", "a..b", ".a", "a b", "a/b", string(long) + ".test", "é.test"} {
		if _, err := canonicalHost(in); err == nil {
			t.Errorf("canonicalHost(%q) accepted", in)
		}
	}
}

// TestHitAllocs: a cache hit with room in dst allocates nothing.
func TestHitAllocs(t *testing.T) {
	srv := startServer(t, zone(t, map[string][]string{"h.test": {"60 IN A 192.0.2.7"}}))
	r := newTestResolver(t, Config{Network: "ip4"}, srv.addr)
	ctx := context.Background()
	if _, err := r.Lookup(ctx, "h.test"); err != nil {
		t.Fatal(err)
	}
	dst := make([]netip.Addr, 0, MaxAddrs)
	host := []byte("H.test")
	allocs := testing.AllocsPerRun(1000, func() {
		got, err := r.AppendLookup(ctx, dst[:0], "h.test")
		if err != nil || len(got) != 1 {
			t.Fatalf("hit: %v %v", got, err)
		}
		if got, _ = r.AppendLookupBytes(ctx, dst[:0], host); len(got) != 1 {
			t.Fatal("bytes hit missed")
		}
	})
	if allocs != 0 {
		t.Errorf("cache hit allocates %v times", allocs)
	}
}

func BenchmarkCacheHit(b *testing.B) {
	srv := startServer(b, zone(b, map[string][]string{"www.example-host.test": {"60 IN A 192.0.2.7"}}))
	r := newTestResolver(b, Config{Network: "ip4"}, srv.addr)
	ctx := context.Background()
	if _, err := r.Lookup(ctx, "www.example-host.test"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]netip.Addr, 0, MaxAddrs)
		for pb.Next() {
			dst, _ = r.AppendLookup(ctx, dst[:0], "www.example-host.test")
		}
	})
}

func BenchmarkCacheHitSerial(b *testing.B) {
	srv := startServer(b, zone(b, map[string][]string{"www.example-host.test": {"60 IN A 192.0.2.7"}}))
	r := newTestResolver(b, Config{Network: "ip4"}, srv.addr)
	ctx := context.Background()
	if _, err := r.Lookup(ctx, "www.example-host.test"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	dst := make([]netip.Addr, 0, MaxAddrs)
	for b.Loop() {
		dst, _ = r.AppendLookup(ctx, dst[:0], "www.example-host.test")
	}
}
