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
// hit costs one memory access (the bucket's tags, read first, stay in the
// CPU cache).
//
// Readers take no lock: every field is an atomic (on amd64 and arm64 an
// atomic load is a plain load), and seq works as a sequence lock - a reader
// reads seq, the fields and seq again, and retries when a writer was busy
// (seq odd or changed).
//
//	seq      even when stable, odd while a writer changes the entry
//	meta     name length | status<<8 | address count<<16 | flags<<24
//	expires  Unix ns of the resolver's clock; 0: empty slot
//	addr4    the first address when it is IPv4 (flag inline4), its bytes in
//	         little-endian order
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
// slot: an insertion takes the preferred slot if it is free or expired,
// else another free or expired slot, else the bucket's oldest insertion
// (FIFO).
//
// Beside the entries each bucket has a tag per slot, one byte of the hash
// of the name the slot holds (0: never used), packed eight to a word. A
// lookup reads the bucket's tag words, which for the whole table take 1/64
// of the entries' memory and so stay in the CPU cache, and then only the
// entry whose tag matches: one entry read per hit wherever the name sits in
// its bucket (a quarter of the names do not sit in their preferred slot at
// half load), which is what lets get's common hit run without a loop.
type cache struct {
	seed0 uint64 // hash seeds, random per cache
	seed1 uint64
	slots int
	words int // tag words per bucket: slots/8 rounded up
	max   int // buckets of the largest table (cache_grow.go)

	tab  atomic.Pointer[table] // the current table; readers load it once per lookup
	grow sync.RWMutex          // put holds it shared, a growth exclusively
}

// table is the cache's storage at one size: buckets × slots entries and
// their tags. A table is replaced by one four times larger (cache_grow.go)
// but never changes size.
type table struct {
	mask    uint64
	tags    []atomic.Uint64 // bucket b owns tags[b*words : (b+1)*words]; slot i is byte i%8 of word i/8
	buckets []bucket
	entries []entry  // bucket b owns entries[b*slots : (b+1)*slots]
	born    []uint32 // per entry: its bucket's count when it was inserted (writers only)
	filled  atomic.Int64
}

// tagOf is the tag of a hash: its top byte, 0 turned to 1 so that 0 can
// mean "no entry".
func tagOf(h uint64) uint64 {
	t := h >> 56
	return t | (t-1)>>63
}

// SWAR constants: one in every byte, the top bit of every byte.
const (
	bytesLo = 0x0101010101010101
	bytesHi = 0x8080808080808080
)

// newCache returns a cache of up to buckets buckets (rounded up to a power
// of two) of slots (1..MaxSlots) slots each. It starts with at most
// firstBuckets and grows as names come (cache_grow.go): made at full size,
// the default table was 1 MB of a small crawl's 8 MB live heap.
func newCache(buckets, slots int) *cache {
	n := 1
	for n < buckets {
		n <<= 1
	}
	var seed [16]byte
	rand.Read(seed[:]) // never fails on Linux; a zero seed is still correct
	c := &cache{
		seed0: binary.LittleEndian.Uint64(seed[:8]),
		seed1: binary.LittleEndian.Uint64(seed[8:]),
		slots: slots,
		words: (slots + 7) / 8,
		max:   n,
	}
	c.tab.Store(c.newTable(min(n, firstBuckets)))
	return c
}

// newTable returns an empty table of n buckets (a power of two).
func (c *cache) newTable(n int) *table {
	entries := make([]entry, n*c.slots)
	hugePageHint(unsafe.Pointer(unsafe.SliceData(entries)), uintptr(len(entries))*unsafe.Sizeof(entry{}))
	return &table{
		mask:    uint64(n - 1),
		tags:    make([]atomic.Uint64, n*c.words),
		buckets: make([]bucket, n),
		entries: entries,
		born:    make([]uint32, n*c.slots),
	}
}

// place returns the bucket and preferred slot of a hash: the bucket from
// the low bits, the slot from the high ones.
func (c *cache) place(t *table, h uint64) (first, pref int) {
	return int(h&t.mask) * c.slots, int((h >> 32) * uint64(c.slots) >> 32) // no division on the hit path
}

// key is a name folded for lookup: its first 32 bytes lower-cased into
// little-endian words, zero padded, its length and its hash.
type key struct {
	w    [shortName / 8]uint64
	n    int
	hash uint64
	name []byte // the name as given, without the trailing dot
}

// word returns bytes 8i..8i+7 of the folded name, zero padded.
func (k *key) word(i int) uint64 { return k.w[i] }

// fold lower-cases and hashes name. It reports false for names that cannot
// be host names (too long), which are never cached.
func (k *key) fold(c *cache, name []byte) bool {
	if n := len(name); n > 0 && name[n-1] == '.' {
		name = name[:n-1]
	}
	if len(name) > 253 {
		return false
	}
	k.n, k.name = len(name), name
	k.w = [shortName / 8]uint64{}
	for i := 0; i < len(name); i += 8 {
		w := lower8(chunk(name, i))
		if i < shortName {
			k.w[i/8] = w
		}
	}
	h := hashWords(c.seed0, c.seed1, k.n, k.w[0], k.w[1], k.w[2], k.w[3])
	for i := shortName; i < len(name); i += 8 {
		hi, lo := bits.Mul64(h^lower8(chunk(name, i)), c.seed1|1)
		h = hi ^ lo
	}
	k.hash = h
	return true
}

// chunk returns bytes i..i+7 of name (i < len(name)), zero padded.
func chunk(name []byte, i int) uint64 {
	if i+8 <= len(name) {
		return binary.LittleEndian.Uint64(name[i:])
	}
	var w uint64
	for j := len(name) - 1; j >= i; j-- {
		w = w<<8 | uint64(name[j])
	}
	return w
}

// hashWords hashes the first four words and the length of a name with two
// independent 64×128-bit multiplications folded together (as wyhash does):
// not cryptographic, but with the per-cache seeds an outsider cannot aim
// names at one bucket cheaply, and a collision only costs a comparison,
// since names are always compared.
func hashWords(s0, s1 uint64, n int, w0, w1, w2, w3 uint64) uint64 {
	a, b := bits.Mul64(w0^s0, w1^s1)
	c, d := bits.Mul64(w2^s1^uint64(n), w3^s0^0x9e3779b97f4a7c15)
	hi, lo := bits.Mul64(a^b^c^d, s1|1)
	return hi ^ lo
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
//
// The common hit - a lower-case name of 8 to 32 bytes, found through the
// first tag word, with one IPv4 address - takes a straight line of about a
// hundred instructions and one branch that depends on the entry. That
// matters more than it seems: a large table's entries are not in the CPU
// cache, and the CPU overlaps the memory accesses of consecutive lookups
// only as far as its reorder window reaches, so the fewer instructions a
// hit takes, the more misses are in flight at once. The general path
// before it took about 300 instructions and 1.4 times as long per hit over
// 250k names. Anything else takes the general path, lookup.
func (c *cache) get(name []byte, now int64, dst []netip.Addr) ([]netip.Addr, status, bool) {
	if n := len(name); n >= 8 && n <= shortName && name[n-1] != '.' {
		// Words 1 to 3 are loaded at most to the name's end and shifted
		// down: their bytes beyond the name fall out, and a word that
		// starts at or after the end shifts by 64 bits or more, which in
		// Go gives 0. The name is taken as it is: one with upper-case
		// letters matches no entry here and is folded by lookup.
		w0 := binary.LittleEndian.Uint64(name)
		o1, o2, o3 := min(8, n-8), min(16, n-8), min(24, n-8)
		w1 := binary.LittleEndian.Uint64(name[o1:]) >> (8 * uint(8-o1))
		w2 := binary.LittleEndian.Uint64(name[o2:]) >> (8 * uint(16-o2))
		w3 := binary.LittleEndian.Uint64(name[o3:]) >> (8 * uint(24-o3))
		h := hashWords(c.seed0, c.seed1, n, w0, w1, w2, w3)
		t := c.tab.Load()
		b := int(h & t.mask)
		x := t.tags[b*c.words].Load() ^ bytesLo*tagOf(h)
		// i is 8 (no slot) when no tag matches.
		if i := bits.TrailingZeros64((x-bytesLo)&^x&bytesHi) / 8; i < c.slots {
			e := &t.entries[b*c.slots+i]
			seq := e.seq.Load()
			meta := e.meta.Load()
			expires := e.expires.Load()
			d := e.shortDiff(w0, w1, w2, w3)
			a := e.addr4.Load()
			const oneInline4 = uint32(statusOK)<<8 | 1<<16 | inline4<<24
			if meta == uint32(n)|oneInline4 && d == 0 && expires > now && e.seq.Load() == seq && seq&1 == 0 {
				return append(dst, addrFrom4(a)), statusOK, true
			}
		}
	}
	return c.lookup(name, now, dst)
}

// lookup is get for any name and entry.
func (c *cache) lookup(name []byte, now int64, dst []netip.Addr) ([]netip.Addr, status, bool) {
	var k key
	if !k.fold(c, name) {
		return dst, 0, false
	}
	return c.find(&k, now, dst)
}

// find looks k up at time now.
func (c *cache) find(k *key, now int64, dst []netip.Addr) (_ []netip.Addr, st status, ok bool) {
	t := c.tab.Load()
	b := int(k.hash & t.mask)
	want := bytesLo * tagOf(k.hash)
	n := len(dst)
	for w := 0; w < c.words; w++ {
		x := t.tags[b*c.words+w].Load() ^ want
		// The top bit of each byte of x that is zero (a tag match); a
		// borrow may also flag the byte above a match, which the name
		// comparison then rejects.
		for m := (x - bytesLo) &^ x & bytesHi; m != 0; m &= m - 1 {
			i := w*8 + bits.TrailingZeros64(m)/8
			if i >= c.slots {
				break
			}
			e := &t.entries[b*c.slots+i]
			for {
				seq := e.seq.Load()
				if seq&1 != 0 {
					runtime.Gosched() // a writer is busy; it holds the entry briefly
					continue
				}
				dst, st, ok = e.read(k, now, dst[:n])
				if e.seq.Load() != seq {
					continue
				}
				if ok {
					return dst, st, true
				}
				break
			}
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
		dst = append(dst, addrFrom4(e.addr4.Load()))
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
	if e.shortDiff(k.w[0], k.w[1], k.w[2], k.w[3]) != 0 {
		return false
	}
	if k.n <= shortName {
		return true
	}
	o := e.over.Load()
	return o != nil && k.equalLong(o.long)
}

// shortDiff is zero when the entry's inline name words are w0..w3: both
// sides are zero padded, so all four are compared at once, one branch for
// the caller whatever the name's length.
func (e *entry) shortDiff(w0, w1, w2, w3 uint64) uint64 {
	return (e.short[0].Load() ^ w0) | (e.short[1].Load() ^ w1) | (e.short[2].Load() ^ w2) | (e.short[3].Load() ^ w3)
}

// addrFrom4 is the IPv4 address held in an entry's addr4.
func addrFrom4(a uint32) netip.Addr {
	var ip [4]byte
	binary.LittleEndian.PutUint32(ip[:], a)
	return netip.AddrFrom4(ip)
}

// put stores what is known about name until expires, at time now: over
// the name's own entry if it has one, else in a free or expired slot
// (the preferred one if it is), else over the bucket's oldest insertion.
// A table smaller than the largest grows first when it is a quarter full
// or the name's bucket has no free slot (cache_grow.go).
func (c *cache) put(name string, st status, addrs []netip.Addr, expires, now int64) {
	var k key
	if !k.fold(c, stringBytes(name)) {
		return
	}
	for {
		c.grow.RLock()
		t := c.tab.Load()
		done := c.putIn(t, &k, st, addrs, expires, now, len(t.buckets) < c.max)
		c.grow.RUnlock()
		if done {
			return
		}
		c.growFrom(t)
	}
}

// putIn is put in table t. With mayGrow it stores nothing and returns false
// when t should grow first.
func (c *cache) putIn(t *table, k *key, st status, addrs []netip.Addr, expires, now int64, mayGrow bool) bool {
	first, pref := c.place(t, k.hash)
	bk := &t.buckets[int(k.hash&t.mask)]
	bk.mu.Lock()
	defer bk.mu.Unlock()
	slot, free, oldest := -1, -1, 0
	for j := 0; j < c.slots; j++ {
		i := pref + j
		if i >= c.slots {
			i -= c.slots
		}
		e := &t.entries[first+i]
		if int(e.meta.Load()&0xff) == k.n && e.expires.Load() != 0 && e.matches(k) {
			slot = i
			break
		}
		if free < 0 && e.expires.Load() <= now {
			free = i
		}
		// Ages count back from the bucket's insertion counter, so the
		// comparison survives its wrapping.
		if bk.count-t.born[first+i] > bk.count-t.born[first+oldest] {
			oldest = i
		}
	}
	switch {
	case slot >= 0:
	case mayGrow && (free < 0 || t.entries[first+free].expires.Load() == 0 && t.full()):
		return false
	case free >= 0:
		slot = free
	default:
		slot = oldest
	}
	e := c.claim(t, k.hash, slot)
	c.write(e, k, st, addrs, expires)
	c.publish(t, k.hash, slot, e)
	return true
}

// claim dates slot of the bucket of hash h in t, whose lock the caller
// holds, and makes its entry's seq odd for the caller to write it.
func (c *cache) claim(t *table, h uint64, slot int) *entry {
	first := int(h&t.mask) * c.slots
	bk := &t.buckets[int(h&t.mask)]
	bk.count++
	t.born[first+slot] = bk.count
	e := &t.entries[first+slot]
	if e.expires.Load() == 0 {
		t.filled.Add(1)
	}
	e.seq.Add(1) // odd: readers of this entry wait
	return e
}

// publish ends the write of a claimed entry and tags its slot.
func (c *cache) publish(t *table, h uint64, slot int, e *entry) {
	e.seq.Add(1)
	// The tag goes in after the entry: a reader that sees the tag finds
	// the entry written, and one that does not see it yet misses, as it
	// would have a moment earlier.
	tw := &t.tags[int(h&t.mask)*c.words+slot/8]
	shift := 8 * uint(slot%8)
	tw.Store(tw.Load()&^(0xff<<shift) | tagOf(h)<<shift)
}

// write fills e, whose seq its caller has made odd, with what is known
// about k's name.
func (c *cache) write(e *entry, k *key, st status, addrs []netip.Addr, expires int64) {
	naddr, flags := min(len(addrs), MaxAddrs), uint32(0)
	addrs = addrs[:naddr]
	if naddr > 0 && addrs[0].Is4() {
		b4 := addrs[0].As4()
		e.addr4.Store(binary.LittleEndian.Uint32(b4[:]))
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
	t := c.tab.Load()
	for i := range t.entries {
		if t.entries[i].expires.Load() > now {
			n++
		}
	}
	return n
}
