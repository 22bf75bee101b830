package resolver

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MaxAddrs is how many addresses a cache entry keeps for one name; further
// addresses of an answer are dropped (a crawler needs one that works).
const MaxAddrs = 4

// MaxSlots is the most slots a bucket may have.
const MaxSlots = 64

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

// shortName is how many bytes of a name an entry holds inline; longer names
// are kept whole in the entry's overflow as well.
const shortName = 32

// entry is one cache slot, one 64-byte cache line holding everything a hit
// on a name of up to 32 bytes with one IPv4 address reads, so that such a
// hit costs one memory access when the name sits in its preferred slot.
//
// Readers take no lock: every field is an atomic (on amd64 and arm64 an
// atomic load is a plain load), and seq works as a sequence lock - a reader
// reads seq, the fields and seq again, and retries when a writer was busy
// (seq odd or changed).
//
//	seq      even when stable, odd while a writer changes the entry
//	meta     name length | status<<8 | address count<<16 | flags<<24
//	expires  Unix ns of the resolver's clock; 0: empty slot
//	addr4    the first address when it is IPv4 (flag inline4)
//	short    name bytes 0..31, lower case, no trailing dot, zero padded
//	over     the long name and the addresses that are not inline
type entry struct {
	seq     atomic.Uint32
	meta    atomic.Uint32
	expires atomic.Int64
	addr4   atomic.Uint32
	_       uint32
	short   [shortName / 8]atomic.Uint64
	over    atomic.Pointer[overflow]
}

// overflow is the immutable part of an entry that does not fit its line.
type overflow struct {
	long string // the whole name, when longer than shortName
	rest [MaxAddrs]netip.Addr
}

// inline4 flags an entry whose first address is the IPv4 address in addr4.
const inline4 = 1

// bucket is what writers of one bucket share; readers never touch it.
type bucket struct {
	mu    sync.Mutex
	count uint32 // insertions so far, to date the slots for FIFO
}

// cache is the thesis's hash table of buckets × slots with FIFO
// replacement. A name's hash picks its bucket and, within it, a preferred
// slot: a lookup starts there and goes round the bucket; an insertion takes
// the preferred slot if it is free or expired, else another free or expired
// slot, else the bucket's oldest insertion (FIFO).
type cache struct {
	seed    uint64
	mask    uint64
	slots   int
	buckets []bucket
	entries []entry  // bucket b owns entries[b*slots : (b+1)*slots]
	born    []uint32 // per entry: its bucket's count when it was inserted (writers only)
}

// newCache returns a cache with at least buckets buckets (rounded up to a
// power of two) of slots (1..MaxSlots) slots each.
func newCache(buckets, slots int) *cache {
	n := 1
	for n < buckets {
		n <<= 1
	}
	var seed [8]byte
	rand.Read(seed[:]) // never fails on Linux; a zero seed is still correct
	entries := make([]entry, n*slots)
	hugePageHint(unsafe.Pointer(unsafe.SliceData(entries)), uintptr(len(entries))*unsafe.Sizeof(entry{}))
	return &cache{
		seed:    binary.LittleEndian.Uint64(seed[:]),
		mask:    uint64(n - 1),
		slots:   slots,
		buckets: make([]bucket, n),
		entries: entries,
		born:    make([]uint32, n*slots),
	}
}

// place returns the bucket and preferred slot of a hash: the bucket from
// the low bits, the slot from the high ones.
func (c *cache) place(h uint64) (first, pref int) {
	return int(h&c.mask) * c.slots, int((h >> 32) * uint64(c.slots) >> 32) // no division on the hit path
}

// key is a name folded for lookup: its first 32 bytes lower-cased into
// words, its length and its hash. It is small so that it lives in registers
// and on the stack without much zeroing.
type key struct {
	w    [shortName / 8]uint64
	n    int
	hash uint64
	name []byte // the name as given, without the trailing dot
}

// word returns bytes 8i..8i+7 of the folded name, zero padded.
func (k *key) word(i int) uint64 { return k.w[i] }

// fold lower-cases and hashes name, 8 bytes at a time. It reports false for
// names that cannot be host names (too long), which are never cached.
func (k *key) fold(seed uint64, name []byte) bool {
	if n := len(name); n > 0 && name[n-1] == '.' {
		name = name[:n-1]
	}
	if len(name) > 253 {
		return false
	}
	k.n, k.name = len(name), name
	h := seed ^ uint64(len(name))*0x9e3779b97f4a7c15
	i := 0
	for ; i+8 <= len(name); i += 8 {
		w := lower8(binary.LittleEndian.Uint64(name[i:]))
		if i < shortName {
			k.w[i/8] = w
		}
		h = mix(h ^ w)
	}
	if rem := len(name) - i; rem > 0 {
		var w uint64
		if len(name) >= 8 {
			// Load the last 8 bytes and shift out those already hashed:
			// one load instead of a byte loop or a copy.
			w = binary.LittleEndian.Uint64(name[len(name)-8:]) >> (8 * (8 - rem))
		} else {
			for j := rem - 1; j >= 0; j-- {
				w = w<<8 | uint64(name[i+j])
			}
		}
		w = lower8(w)
		if i < shortName {
			k.w[i/8] = w
		}
		h = mix(h ^ w)
	}
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	k.hash = h
	return true
}

// equalLong reports whether long (lower case) is k's name in any case.
func (k *key) equalLong(long string) bool {
	if len(long) != len(k.name) {
		return false
	}
	for i := 0; i < len(long); i++ {
		c := k.name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != long[i] {
			return false
		}
	}
	return true
}

// lowerString returns name lower-cased (ASCII).
func lowerString(name []byte) string {
	b := make([]byte, len(name))
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return string(b)
}

// mix is one round of a multiply-rotate hash: not cryptographic, but with
// the per-cache seed an outsider cannot aim names at one bucket cheaply, and
// a collision only costs a comparison, since names are always compared.
func mix(h uint64) uint64 {
	return bits.RotateLeft64(h*0x9e3779b97f4a7c15, 31) * 0xc2b2ae3d27d4eb4f
}

// lower8 lower-cases the ASCII letters among 8 bytes (SWAR).
func lower8(w uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	heptets := w &^ hi
	geA := heptets + lo*(0x80-'A') // high bit set where byte >= 'A'
	gtZ := heptets + lo*(0x80-'Z'-1)
	upper := (geA &^ gtZ) &^ w & hi // >= 'A', <= 'Z', ASCII
	return w | upper>>2
}

// stringBytes views s as bytes without copying; the bytes must not be
// modified.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// get looks name up at time now. On a live entry it appends the addresses
// to dst and returns the entry's status; ok is false on a miss or an expired
// entry.
func (c *cache) get(name []byte, now int64, dst []netip.Addr) (_ []netip.Addr, st status, ok bool) {
	var k key
	if !k.fold(c.seed, name) {
		return dst, 0, false
	}
	first, pref := c.place(k.hash)
	n := len(dst)
	for j := 0; j < c.slots; j++ {
		i := pref + j
		if i >= c.slots {
			i -= c.slots
		}
		e := &c.entries[first+i]
		for {
			seq := e.seq.Load()
			if seq&1 != 0 {
				runtime.Gosched() // a writer is busy; it holds the entry briefly
				continue
			}
			dst, st, ok = e.read(&k, now, dst[:n])
			if e.seq.Load() != seq {
				continue
			}
			if ok {
				return dst, st, true
			}
			break
		}
	}
	return dst[:n], 0, false
}

// read is one attempt at matching e against k; its result is only valid if
// e.seq did not change meanwhile.
func (e *entry) read(k *key, now int64, dst []netip.Addr) ([]netip.Addr, status, bool) {
	meta := e.meta.Load()
	if int(meta&0xff) != k.n || e.expires.Load() <= now || !e.matches(k) {
		return dst, 0, false
	}
	naddr := min(int(meta>>16&0xff), MaxAddrs)
	first := 0
	if meta>>24&inline4 != 0 && naddr > 0 {
		a := e.addr4.Load()
		dst = append(dst, netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}))
		first = 1
	}
	if naddr > first {
		if o := e.over.Load(); o != nil {
			dst = append(dst, o.rest[:naddr-first]...)
		}
	}
	return dst, status(meta >> 8 & 0xff), true
}

// matches compares the entry's name with k, whose length the caller has
// checked.
func (e *entry) matches(k *key) bool {
	for i := range min(k.n+7, shortName) / 8 {
		if e.short[i].Load() != k.word(i) {
			return false
		}
	}
	if k.n <= shortName {
		return true
	}
	o := e.over.Load()
	return o != nil && k.equalLong(o.long)
}

// put stores what is known about name until expires, at time now: over
// the name's own entry if it has one, else in a free or expired slot
// (the preferred one if it is), else over the bucket's oldest insertion.
func (c *cache) put(name string, st status, addrs []netip.Addr, expires, now int64) {
	var k key
	if !k.fold(c.seed, stringBytes(name)) {
		return
	}
	first, pref := c.place(k.hash)
	bk := &c.buckets[int(k.hash&c.mask)]
	bk.mu.Lock()
	defer bk.mu.Unlock()
	slot, free, oldest := -1, -1, 0
	for j := 0; j < c.slots; j++ {
		i := pref + j
		if i >= c.slots {
			i -= c.slots
		}
		e := &c.entries[first+i]
		if int(e.meta.Load()&0xff) == k.n && e.expires.Load() != 0 && e.matches(&k) {
			slot = i
			break
		}
		if free < 0 && e.expires.Load() <= now {
			free = i
		}
		// Ages count back from the bucket's insertion counter, so the
		// comparison survives its wrapping.
		if bk.count-c.born[first+i] > bk.count-c.born[first+oldest] {
			oldest = i
		}
	}
	switch {
	case slot >= 0:
	case free >= 0:
		slot = free
	default:
		slot = oldest
	}
	bk.count++
	c.born[first+slot] = bk.count
	e := &c.entries[first+slot]
	e.seq.Add(1) // odd: readers of this entry wait
	defer e.seq.Add(1)

	naddr, flags := min(len(addrs), MaxAddrs), uint32(0)
	addrs = addrs[:naddr]
	if naddr > 0 && addrs[0].Is4() {
		b4 := addrs[0].As4()
		e.addr4.Store(binary.BigEndian.Uint32(b4[:]))
		flags |= inline4
		addrs = addrs[1:]
	}
	var o *overflow
	if len(addrs) > 0 || k.n > shortName {
		o = new(overflow)
		copy(o.rest[:], addrs)
		if k.n > shortName {
			o.long = lowerString(k.name)
		}
	}
	e.over.Store(o)
	for i := range e.short {
		e.short[i].Store(k.word(i))
	}
	e.expires.Store(expires)
	e.meta.Store(uint32(k.n) | uint32(st)<<8 | uint32(naddr)<<16 | flags<<24)
}

// len counts the live entries at time now (for statistics and tests).
func (c *cache) len(now int64) int {
	n := 0
	for i := range c.entries {
		if c.entries[i].expires.Load() > now {
			n++
		}
	}
	return n
}
