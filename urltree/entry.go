package urltree

import (
	"encoding/binary"
	"math/bits"
)

// An arena entry holds one URL relative to its reference URL:
//
//	uvarint  body length (bytes after this varint)
//	uvarint  lcp: length of the prefix shared with the reference URL
//	uvarint  id - reference id (only when lcp > 0; always >= 1)
//	bytes    tail: the URL's bytes from position lcp on
//
// Entries are appended in id order, so the pointer array keeps only the
// offset of every 16th entry (ptrShift) and a lookup skips at most 15
// entries by their body lengths: 0.5 bytes per URL instead of a 5-byte
// pointer per entry.
const (
	ptrShift = 4
	ptrBlock = 1 << ptrShift
)

// entry is a decoded arena entry; tail aliases the mapping.
type entry struct {
	lcp  int
	ref  uint32
	tail []byte
}

func (e entry) urlLen() int { return e.lcp + len(e.tail) }

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

// entryOffset returns where entry id starts. It trusts the pointer array
// and the body lengths, which Open validated.
func (t *Tree) entryOffset(id uint32) uint64 {
	off := t.ptrs[id>>ptrShift]
	a := t.arena
	for k := id & (ptrBlock - 1); k > 0; k-- {
		l, n := uvarint(a, off)
		off += uint64(n) + l
	}
	return off
}

// entryAt decodes the entry of id starting at off.
func (t *Tree) entryAt(id uint32, off uint64) entry {
	a := t.arena
	blen, n := uvarint(a, off)
	off += uint64(n)
	end := off + blen
	lcp, n := uvarint(a, off)
	off += uint64(n)
	e := entry{lcp: int(lcp)}
	if lcp > 0 {
		d, n := uvarint(a, off)
		off += uint64(n)
		e.ref = id - uint32(d)
	}
	e.tail = a[off:end:end]
	return e
}

func (t *Tree) entry(id uint32) entry { return t.entryAt(id, t.entryOffset(id)) }

// appendEntry encodes the entry of id into dst.
func appendEntry(dst []byte, id uint32, lcp int, ref uint32, tail []byte) []byte {
	body := uvarintLen(uint64(lcp)) + len(tail)
	if lcp > 0 {
		body += uvarintLen(uint64(id - ref))
	}
	dst = binary.AppendUvarint(dst, uint64(body))
	dst = binary.AppendUvarint(dst, uint64(lcp))
	if lcp > 0 {
		dst = binary.AppendUvarint(dst, uint64(id-ref))
	}
	return append(dst, tail...)
}

// appendURL appends the URL of id to dst, following the reference chain.
func (t *Tree) appendURL(dst []byte, id uint32) []byte {
	e := t.entry(id)
	n := e.urlLen()
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	out := dst[start:]
	copy(out[e.lcp:], e.tail)
	upto, cur := e.lcp, e.ref
	for upto > 0 {
		e = t.entry(cur)
		if e.lcp < upto {
			copy(out[e.lcp:upto], e.tail)
			upto = e.lcp
		}
		cur = e.ref
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
