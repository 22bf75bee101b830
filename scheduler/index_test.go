package scheduler

import (
	"strconv"
	"testing"
	"time"
)

// collidingNames returns n host names whose HostHash ends in bits zero
// bits, found by trying names in turn as a hostile web naming its hosts
// would (2^bits tries a name on average).
func collidingNames(n, bits int) []string {
	mask := uint64(1)<<bits - 1
	var out []string
	b := []byte("h")
	for i := 0; len(out) < n; i++ {
		b = strconv.AppendInt(b[:1], int64(i), 36)
		b = append(b, ".evil.example"...)
		if hostHash(b)&mask == 0 {
			out = append(out, string(b))
		}
	}
	return out
}

// TestHostIndexCollisions: the host index took its slots from HostHash,
// which is the same for everybody, so host names chosen for HostHashes
// ending alike all fell in one run of slots, and every insert and lookup
// walked it (quadratic in the hosts a hostile web named: 2048 of them
// probed 2 million slots). Now its slots come from a hash with a seed of
// its own, and such names spread as any do.
func TestHostIndexCollisions(t *testing.T) {
	names := collidingNames(2048, 13)
	s := mustOpen(t, t.TempDir(), basicConfig(newFakeClock(1, time.Hour, 0)))
	defer s.Close()
	for _, n := range names {
		if _, err := s.Host(n); err != nil {
			t.Fatal(err)
		}
	}
	x := &s.index
	longest := uint64(0)
	for i, v := range x.slots {
		if v != 0 {
			longest = max(longest, (uint64(i)-x.home(s.names[v-1]))&x.mask())
		}
	}
	// Random names in a table at most half full: a run of more than 64
	// has odds of well under one in a million.
	if longest > 64 {
		t.Errorf("a host %d slots from where its name hashes to (%d hosts, %d slots)", longest, x.n, len(x.slots))
	}
	for i, n := range names {
		if h, ok := s.FindHost(n); !ok || h != uint32(i) {
			t.Fatalf("FindHost(%q) = %d, %v; want %d", n, h, ok, i)
		}
	}
}
