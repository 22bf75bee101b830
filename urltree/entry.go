package urltree

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"runtime"
)

// Entries are appended to the arena in id order. The pointer file holds the
// arena offset of every 16th entry (ptrBlock), 8 bytes little endian: 0.5
// bytes per URL, small enough to stay in the CPU caches, where a 5-byte
// pointer per entry would not. Finding an entry skips at most 15 entries of
// its block by their lengths, mostly within the cache lines it reads
// anyway. Entries of a block are contiguous; a block may start after unused
// bytes (Tree.Add never leaves any, the test of offsets past 4 GiB does).
// An entry is
//
//	uvarint  body length: bytes after this field
//	uvarint  lcp: length of the prefix shared with the reference URL
//	uvarint  id - reference id (only when lcp > 0); 0: the built-in
//	         prefix of length lcp (static.go)
//	bytes    the tail (the URL's bytes from lcp on), Huffman coded
//	         (huffman.go)
//
// An entry with lcp 0 and an empty tail (bytes 01 00) is a lost URL: a
// repair (Check) writes it for an id whose entry was damaged, so that the
// ids after it keep their numbers.
//
// Checksums (format version 2): a full block of 16 entries is followed by
// a 4-byte trailer, the CRC-32C of the block number (4 bytes, little
// endian) and the block's entry bytes; the number makes swapped blocks
// fail. The last block, until it is full, has no trailer: the commit
// records the checksum of its committed entries (meta.go). Open verifies
// every committed block, and checks that each block pointer points at a
// block that verifies, so damage is found where it is: a pointer that
// points elsewhere than its verified block is damage in the pointer file,
// a block that fails at its pointer is damage in the arena. The trailers
// cost 0.25 bytes per URL; Find and Get never read them (they trust what
// Open verified), so they cost a lookup nothing.
const (
	ptrShift     = 4
	ptrBlock     = 1 << ptrShift
	ptrRecord    = 8
	blockTrailer = 4
)

// blockSeed is the checksum of block k's number, where the checksum of
// its entries starts.
func blockSeed(k uint64) uint32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(k))
	return crc32.Update(0, castagnoli, b[:])
}

// entry is a decoded arena entry: the tail's code is arena[tail:end]. ref
// is none when the first lcp bytes are a built-in prefix.
type entry struct {
	lcp       int
	ref       uint32
	tail, end uint64
}

// uvarint decodes a varint from b at off; n is 0 when b is too short or
// the value overflows.
func uvarint(b []byte, off uint64) (v uint64, n int) {
	if off < uint64(len(b)) && b[off] < 0x80 {
		return uint64(b[off]), 1
	}
	if off >= uint64(len(b)) {
		return 0, 0
	}
	v, n = binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, 0
	}
	return v, n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// locate returns where entry id's body starts and its body length. It
// trusts the pointer file and the lengths, which Open validated.
func (t *Tree) locate(id uint32) (off, blen uint64) {
	off = binary.LittleEndian.Uint64(t.ptrs[uint64(id>>ptrShift)*ptrRecord:])
	a := t.arena
	for k := id & (ptrBlock - 1); ; k-- {
		l, n := uvarint(a, off)
		if k == 0 {
			return off + uint64(n), l
		}
		off += uint64(n) + l
	}
}

// entry decodes the entry of id.
func (t *Tree) entry(id uint32) entry {
	off, blen := t.locate(id)
	a := t.arena
	end := off + blen
	lcp, n := uvarint(a, off)
	off += uint64(n)
	e := entry{lcp: int(lcp), end: end}
	if lcp > 0 {
		d, n := uvarint(a, off)
		off += uint64(n)
		e.ref = id - uint32(d)
		if d == 0 {
			e.ref = none // a built-in prefix (static.go)
		}
	}
	e.tail = off
	return e
}

func (t *Tree) reader(e entry) tailReader {
	return tailReader{a: t.arena, pos: e.tail * 8, end: e.end * 8, h: t.huff}
}

// appendEntry appends the encoded entry of id to dst.
func (t *Tree) appendEntry(dst []byte, id uint32, lcp int, ref uint32, tail []byte) []byte {
	var dist uint64
	if ref != none {
		dist = uint64(id - ref)
	}
	body := uvarintLen(uint64(lcp)) + t.huff.codedLen(tail)
	if lcp > 0 {
		body += uvarintLen(dist)
	}
	dst = binary.AppendUvarint(dst, uint64(body))
	dst = binary.AppendUvarint(dst, uint64(lcp))
	if lcp > 0 {
		dst = binary.AppendUvarint(dst, dist)
	}
	return t.huff.appendCoded(dst, tail)
}

// appendURL appends the URL of id to dst, following the reference chain.
func (t *Tree) appendURL(dst []byte, id uint32) []byte {
	e := t.entry(id)
	var touch byte
	if e.lcp > 0 && e.ref != none {
		// Start loading the reference's block pointer; decoding the
		// tail hides much of the wait.
		touch = t.ptrs[uint64(e.ref>>ptrShift)*ptrRecord]
	}
	start := len(dst)
	dst = append(dst, make([]byte, e.lcp)...)
	r := t.reader(e)
	dst = r.appendAll(dst)
	runtime.KeepAlive(touch) // keeps the load
	out := dst[start:]
	upto, cur, sl := e.lcp, e.ref, e.lcp
	for upto > 0 {
		if cur == none {
			copy(out[:upto], staticPrefix(sl))
			break
		}
		e = t.entry(cur)
		if e.lcp < upto {
			r := t.reader(e)
			r.fill(out[e.lcp:upto])
			upto = e.lcp
		}
		cur, sl = e.ref, e.lcp
	}
	return dst
}

// mismatch returns the length of the common prefix of a and b.
func mismatch(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// cutBytes: a hop supplying this many bytes or fewer is cut from a new
// entry's chain by storing those bytes in its tail. On the shared URL set
// 4 cut the mean chain from 5.4 to 2.5 hops for 0.8 bytes per URL (2: 3.2
// hops, +0.3 bytes; 6: 2.2 hops, +1.1 bytes).
const cutBytes = 4

// chooseRef settles the reference of a new URL u sharing lcp bytes with
// ref. A reference that shares at least as much with its own reference
// adds no bytes to a Get: the entry refers past it, so every hop adds
// bytes. Hops that add only a few bytes (cutBytes) cost a Get a cache miss
// each, so the entry stores those bytes itself and refers further down the
// chain, or to a built-in prefix, which costs no memory access at all.
func (t *Tree) chooseRef(u []byte, lcp int, ref uint32) (int, uint32) {
	sp := staticLen(u)
	upto, cur := lcp, ref
	for {
		if upto <= sp || cur == none {
			if sp == 0 {
				return 0, 0
			}
			return sp, none
		}
		e := t.entry(cur)
		if e.lcp < upto {
			if e.lcp <= sp && upto-sp <= cutBytes {
				return sp, none
			}
			if upto-e.lcp > cutBytes || e.lcp == 0 {
				return upto, cur
			}
			upto = e.lcp
		}
		cur = e.ref
	}
}
