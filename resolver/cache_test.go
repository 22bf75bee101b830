package resolver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCacheFIFO(t *testing.T) {
	c := newCache(1, 2)
	a := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	c.put("a.test", statusOK, a, 100, 0)
	c.put("b.test", statusOK, a, 100, 0)
	c.put("a.test", statusOK, a, 200, 0) // refreshed in place: a new insertion, in the same slot
	c.put("c.test", statusOK, a, 100, 0) // evicts the oldest insertion: b.test
	for name, want := range map[string]bool{"a.test": true, "b.test": false, "c.test": true} {
		if _, _, ok := c.get([]byte(name), 50, nil); ok != want {
			t.Errorf("%s cached = %v, want %v", name, ok, want)
		}
	}
	if _, _, ok := c.get([]byte("c.test"), 100, nil); ok {
		t.Error("entry still live at its expiry time")
	}
}

func TestCacheKeyFolding(t *testing.T) {
	c := newCache(16, 4)
	c.put("www.example.org", statusOK, []netip.Addr{netip.MustParseAddr("192.0.2.1")}, 10, 0)
	for _, k := range []string{"www.example.org", "WWW.Example.ORG", "www.example.org."} {
		if got, st, ok := c.get([]byte(k), 0, nil); !ok || st != statusOK || len(got) != 1 {
			t.Errorf("cacheGet(%q) = %v %v %v", k, got, st, ok)
		}
		if _, _, ok := c.get([]byte(k), 0, nil); !ok {
			t.Errorf("cacheGet([]byte %q) missed", k)
		}
	}
	for _, k := range []string{"www.example.or", "ww.example.org", "www.example.org..", ""} {
		if _, _, ok := c.get([]byte(k), 0, nil); ok {
			t.Errorf("cacheGet(%q) hit", k)
		}
	}
}

func TestCacheLongNamesAndAddresses(t *testing.T) {
	c := newCache(4, 2)
	long := strings.Repeat("abcdefgh.", 6) + "test" // 58 bytes: beyond the inline part
	addrs := []netip.Addr{
		netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.1"),
		netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("192.0.2.3"),
	}
	c.put(long, statusOK, addrs, 10, 0)
	got, st, ok := c.get([]byte(strings.ToUpper(long)+"."), 0, nil)
	if !ok || st != statusOK || len(got) != MaxAddrs {
		t.Fatalf("long name: %v %v %v", got, st, ok)
	}
	for i := range got {
		if got[i] != addrs[i] {
			t.Errorf("address %d = %v, want %v", i, got[i], addrs[i])
		}
	}
	// Same length and same first 32 bytes, different tail.
	other := long[:len(long)-1] + "x"
	if _, _, ok := c.get([]byte(other), 0, nil); ok {
		t.Error("a name differing after byte 32 hit")
	}
	c.put("v4.test", statusOK, addrs[1:3], 10, 0)
	if got, _, _ := c.get([]byte("v4.test"), 0, nil); len(got) != 2 || got[0] != addrs[1] || got[1] != addrs[2] {
		t.Errorf("two IPv4 addresses: %v", got)
	}
	c.put("none.test", statusNXDomain, nil, 10, 0)
	if got, st, ok := c.get([]byte("none.test"), 0, nil); !ok || st != statusNXDomain || len(got) != 0 {
		t.Errorf("negative entry: %v %v %v", got, st, ok)
	}
}

// TestCacheConcurrentConsistency: readers racing with writers of the same
// slot never see one name with another's address, on the general path
// (short names) and on get's straight-line one (8 to 32 bytes).
func TestCacheConcurrentConsistency(t *testing.T) {
	for _, names := range [][2]string{{"x.test", "y.test"}, {"xx-host.example.test", "yy-host.example.test"}} {
		c := newCache(1, 1)
		x, y := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::2")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%2 == 0 {
					c.put(names[0], statusOK, []netip.Addr{x}, 10, 0)
				} else {
					c.put(names[1], statusOK, []netip.Addr{y, y}, 10, 0)
				}
			}
		}()
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dst := make([]netip.Addr, 0, MaxAddrs)
				for range 20000 {
					if got, _, ok := c.get([]byte(names[0]), 0, dst[:0]); ok && (len(got) != 1 || got[0] != x) {
						t.Errorf("%s read as %v", names[0], got)
						return
					}
					if got, _, ok := c.get([]byte(names[1]), 0, dst[:0]); ok && (len(got) != 2 || got[0] != y || got[1] != y) {
						t.Errorf("%s read as %v", names[1], got)
						return
					}
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		close(stop)
		wg.Wait()
	}
}

// TestCacheModel checks get against a map over names of every length
// around the word boundaries of the inline name and of get's straight-line
// path, looked up in other cases, with a trailing dot, and one byte off.
func TestCacheModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789-."
	c := newCache(4096, 8) // 32768 slots for < 2000 names: no bucket overflows
	model := map[string][]netip.Addr{}
	for n := 1; n <= 70; n++ {
		for range 25 {
			b := make([]byte, n)
			for i := range b {
				b[i] = letters[rng.IntN(len(letters)-1)] // no dot: no trailing one
			}
			var addrs []netip.Addr
			switch rng.IntN(4) {
			case 0: // one IPv4 address: get's straight line
				addrs = []netip.Addr{netip.AddrFrom4([4]byte{10, byte(n), byte(rng.IntN(256)), byte(rng.IntN(256))})}
			case 1:
				addrs = []netip.Addr{netip.AddrFrom4([4]byte{10, 1, 2, byte(n)}), netip.AddrFrom4([4]byte{10, 3, 4, byte(n)})}
			case 2:
				addrs = []netip.Addr{netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(n)})}
			}
			// A sibling one byte apart, with addresses of its own: a
			// comparison that lets one word's difference hide behind
			// another's bits gives one the other's addresses.
			sib := slices.Clone(b)
			i := rng.IntN(n)
			sib[i] = letters[(strings.IndexByte(letters, sib[i])+1+rng.IntN(len(letters)-2))%(len(letters)-1)]
			sibAddrs := []netip.Addr{netip.AddrFrom4([4]byte{10, 9, byte(n), byte(i)})}
			for name, a := range map[string][]netip.Addr{string(b): addrs, string(sib): sibAddrs} {
				model[name] = a
				st := statusOK
				if a == nil {
					st = statusNXDomain
				}
				c.put(name, st, a, 100, 0)
			}
		}
	}
	dst := make([]netip.Addr, 0, MaxAddrs)
	for name, want := range model {
		for _, q := range []string{name, strings.ToUpper(name), name + ".", strings.ToUpper(name[:1]) + name[1:]} {
			got, st, ok := c.get([]byte(q), 50, dst[:0])
			if !ok || (st == statusOK) != (want != nil) || !slices.Equal(got, want) {
				t.Fatalf("get(%q) = %v %v %v, want %v", q, got, st, ok, want)
			}
		}
		// One byte off, one byte more or less: never a hit on name's entry.
		off := []byte(name)
		off[len(off)-1] ^= 0x40
		for _, q := range []string{string(off), name + "a", name[:len(name)-1]} {
			if got, _, ok := c.get([]byte(q), 50, dst[:0]); ok && model[strings.ToLower(q)] == nil && len(got) > 0 {
				t.Fatalf("get(%q) hit %v", q, got)
			}
		}
		if _, _, ok := c.get([]byte(name), 100, dst[:0]); ok {
			t.Fatalf("get(%q) hit at its expiry", name)
		}
	}
}

// TestCacheCompare forces every comparison a tag match leads to: for each
// length and each byte position, a name one byte apart from the cached one,
// given the cached entry's slot tag, must miss.
func TestCacheCompare(t *testing.T) {
	a := []netip.Addr{netip.MustParseAddr("192.0.2.1")}
	for n := 1; n <= 70; n++ {
		name := []byte(strings.Repeat("abcdefghij", 7)[:n])
		c := newCache(1, 1)
		c.put(string(name), statusOK, a, 100, 0)
		for i := range n {
			for _, b := range []byte("abcdefghijklmnopqrstuvwxyz0123456789-.") {
				if b == name[i] {
					continue
				}
				other := slices.Clone(name)
				other[i] = b
				var k key
				k.fold(c, other)
				c.tab.Load().tags[0].Store(tagOf(k.hash)) // slot 0 now claims other's tag
				if got, _, ok := c.get(other, 50, nil); ok {
					t.Fatalf("%q cached, %q hit: %v", name, other, got)
				}
			}
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "a_b.test": "a_b.test", "x": "x",
	} {
		if got, err := CanonicalHost(in); err != nil || got != want {
			t.Errorf("CanonicalHost(%q) = %q, %v", in, got, err)
		}
	}
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'a'
	}
	for _, in := range []string{"", ".", "a..b", ".a", "a b", "a/b", string(long) + ".test", "é.test"} {
		if _, err := CanonicalHost(in); err == nil {
			t.Errorf("CanonicalHost(%q) accepted", in)
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
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		dst := make([]netip.Addr, 0, MaxAddrs)
		for b.Loop() {
			dst, _ = r.AppendLookup(ctx, dst[:0], "www.example-host.test")
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			dst := make([]netip.Addr, 0, MaxAddrs)
			for pb.Next() {
				dst, _ = r.AppendLookup(ctx, dst[:0], "www.example-host.test")
			}
		})
	})
}

// BenchmarkCacheHitMany looks up n cached names round-robin, against the
// baseline of a Go map holding the same names. Beyond the CPU caches a hit
// costs a memory access; cpu-ns/op (this thread's CPU time) leaves out the
// time the shared machine spends elsewhere.
func BenchmarkCacheHitMany(b *testing.B) {
	for _, n := range []int{1000, 250000} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("www.host%d.example.com", i*7919)
		}
		a := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		b.Run(fmt.Sprintf("cache-%d", n), func(b *testing.B) {
			clk := time.Now()
			r, err := New(Config{Servers: []string{"127.0.0.1:1"}, Buckets: n / 4, Now: func() time.Time { return clk }})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			for _, h := range names {
				r.cache.put(h, statusOK, a, clk.UnixNano()+int64(time.Hour), clk.UnixNano())
			}
			dst := make([]netip.Addr, 0, MaxAddrs)
			misses := 0
			b.ReportAllocs()
			cpu := startCPU()
			i := 0
			for b.Loop() {
				var ok bool
				if dst, ok, _ = r.AppendCached(dst[:0], names[i]); !ok {
					misses++ // evicted: its bucket overflowed
				}
				if i++; i == n {
					i = 0
				}
			}
			cpu.report(b)
			b.ReportMetric(float64(misses)/float64(b.N), "misses/op")
		})
		b.Run(fmt.Sprintf("map-%d", n), func(b *testing.B) {
			m := make(map[string][]netip.Addr, n)
			for _, h := range names {
				m[h] = a
			}
			dst := make([]netip.Addr, 0, MaxAddrs)
			cpu := startCPU()
			i := 0
			for b.Loop() {
				dst = append(dst[:0], m[names[i]]...)
				if i++; i == n {
					i = 0
				}
			}
			cpu.report(b)
		})
	}
}

// threadCPU measures the CPU time of the benchmark's own thread.
type threadCPU struct{ start int64 }

func startCPU() threadCPU {
	runtime.LockOSThread()
	return threadCPU{start: cpuNow()}
}

func (c threadCPU) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
	runtime.UnlockOSThread()
}

func cpuNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
