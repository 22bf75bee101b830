package resolver

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"sync"
)

// MaxAddrs is how many addresses a cache entry keeps for one name; further
// addresses of an answer are dropped (a crawler needs one that works).
const MaxAddrs = 6

// status is what the cache knows about a name.
type status uint8

const (
	statusOK           status = iota + 1 // addresses known
	statusNXDomain                       // the name does not exist
	statusNoData                         // the name exists but has no address of the asked family
	statusServFail                       // every server failed or timed out
	statusCNAMELoop                      // the CNAME chain loops
	statusCNAMETooLong                   // the CNAME chain exceeds MaxCNAME
)

// entry is one cache slot. Its fields are fixed-size apart from name, so a
// hit copies addresses out without allocating. expires is in nanoseconds of
// the resolver's clock (Unix time); 0 marks an empty slot.
type entry struct {
	hash    uint64
	expires int64
	name    string // lower case, without the trailing dot
	status  status
	naddr   uint8
	addrs   [MaxAddrs]netip.Addr
}

// bucket guards its slots; it is padded to a cache line so that readers of
// neighbouring buckets on different cores do not share one.
type bucket struct {
	mu   sync.RWMutex
	next uint32 // FIFO position of the next insertion
	_    [64 - 24 - 4]byte
}

// cache is the hash table of buckets × slots with FIFO replacement.
type cache struct {
	seed    uint64
	mask    uint64
	slots   int
	buckets []bucket
	entries []entry // bucket b owns entries[b*slots : (b+1)*slots]
}

// newCache returns a cache with at least buckets buckets (rounded up to a
// power of two) of slots slots each.
func newCache(buckets, slots int) *cache {
	n := 1
	for n < buckets {
		n <<= 1
	}
	var seed [8]byte
	rand.Read(seed[:]) // never fails on Linux; a zero seed is still correct
	return &cache{
		seed:    binary.LittleEndian.Uint64(seed[:]) | 1,
		mask:    uint64(n - 1),
		slots:   slots,
		buckets: make([]bucket, n),
		entries: make([]entry, n*slots),
	}
}

// hostName is what the cache accepts as a key without converting it.
type hostName interface{ ~string | ~[]byte }

// hashName hashes name case-insensitively, ignoring one trailing dot. It is
// FNV-1a over ASCII-folded bytes with a per-cache random seed, finished with
// a multiply-xorshift so that the low bits (the bucket) depend on every byte.
func hashName[T hostName](seed uint64, name T) uint64 {
	n := len(name)
	if n > 0 && name[n-1] == '.' {
		n--
	}
	h := seed ^ 0xcbf29ce484222325
	for i := 0; i < n; i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	h ^= h >> 32
	h *= 0x9e3779b97f4a7c15
	h ^= h >> 29
	return h
}

// equalName reports whether name (any case, optional trailing dot) is key
// (lower case, no trailing dot).
func equalName[T hostName](key string, name T) bool {
	n := len(name)
	if n > 0 && name[n-1] == '.' {
		n--
	}
	if n != len(key) {
		return false
	}
	for i := 0; i < n; i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != key[i] {
			return false
		}
	}
	return true
}

// cacheGet looks name up at time now. On a live entry it appends the
// addresses to dst and returns the entry's status; ok is false on a miss or
// an expired entry.
func cacheGet[T hostName](c *cache, name T, now int64, dst []netip.Addr) (_ []netip.Addr, st status, ok bool) {
	h := hashName(c.seed, name)
	b := h & c.mask
	bk := &c.buckets[b]
	slots := c.entries[int(b)*c.slots : int(b+1)*c.slots]
	bk.mu.RLock()
	for i := range slots {
		e := &slots[i]
		if e.hash == h && e.expires > now && equalName(e.name, name) {
			dst = append(dst, e.addrs[:e.naddr]...)
			st = e.status
			bk.mu.RUnlock()
			return dst, st, true
		}
	}
	bk.mu.RUnlock()
	return dst, 0, false
}

// put stores what is known about name (lower case, no trailing dot) until
// expires. An entry for the same name is overwritten in place; otherwise the
// oldest slot of the bucket is replaced (FIFO).
func (c *cache) put(name string, st status, addrs []netip.Addr, expires int64) {
	h := hashName(c.seed, name)
	b := h & c.mask
	bk := &c.buckets[b]
	slots := c.entries[int(b)*c.slots : int(b+1)*c.slots]
	bk.mu.Lock()
	defer bk.mu.Unlock()
	var e *entry
	for i := range slots {
		if slots[i].hash == h && slots[i].name == name {
			e = &slots[i]
			break
		}
	}
	if e == nil {
		e = &slots[bk.next]
		bk.next = (bk.next + 1) % uint32(c.slots)
	}
	e.hash = h
	e.expires = expires
	e.name = name
	e.status = st
	e.naddr = uint8(copy(e.addrs[:], addrs))
	clear(e.addrs[e.naddr:])
}

// len counts the live entries at time now (for statistics and tests).
func (c *cache) len(now int64) int {
	n := 0
	for b := range c.buckets {
		bk := &c.buckets[b]
		bk.mu.RLock()
		for _, e := range c.entries[b*c.slots : (b+1)*c.slots] {
			if e.expires > now {
				n++
			}
		}
		bk.mu.RUnlock()
	}
	return n
}
