package urltree

import (
	"encoding/binary"
	"sync"
)

// Tails are stored in a static canonical Huffman code, MSB first, padded
// with 1 bits to a whole byte. The code lengths below were fitted (limited
// to maxCodeLen bits, every byte value coded) to the byte frequencies of
// URL tails: lowercase letters, digits, '/', '.' and '-' take 4 to 6 bits,
// so tails shrink by about a third. Changing the table changes the format.
//
// A tail has no length field: the longest codes are the all-ones ones, so
// fewer than 8 trailing 1 bits never form a symbol and mark the end.
const maxCodeLen = 12

// codeLengths[b] is the length of byte b's code.
const codeLengths = "" +
	"\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c" +
	"\x0c\x0c\x0c\x0c\x0c\x07\x09\x0c\x0c\x0c\x0c\x0c\x0c\x06\x05\x04\x07\x07\x07\x08\x08\x08\x09\x08\x08\x08\x0a\x0c\x0c\x08\x0c\x09" +
	"\x0c\x08\x09\x09\x08\x08\x0a\x0a\x0b\x09\x0c\x0c\x09\x0a\x09\x0b\x0a\x0c\x0a\x08\x0a\x0b\x0b\x0b\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x07" +
	"\x0c\x04\x07\x05\x05\x04\x07\x06\x06\x04\x08\x07\x05\x05\x05\x04\x05\x09\x04\x04\x04\x06\x07\x07\x07\x07\x08\x0c\x0c\x0c\x0c\x0c" +
	"\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c" +
	"\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c" +
	"\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0a\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c" +
	"\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c\x0c"

// huffCode holds the derived encoding and decoding tables.
type huffCode struct {
	code [256]uint16 // right-aligned codes
	size [256]uint8
	// dec maps the next maxCodeLen bits to symbol | length<<8.
	dec [1 << maxCodeLen]uint16
	// dec2 maps them to up to two symbols: first | second<<8 |
	// count<<16 | total length<<24, so common letters decode in pairs.
	dec2 [1 << maxCodeLen]uint32
}

// huffTables builds the tables once; they are never written afterwards.
var huffTables = sync.OnceValue(func() *huffCode {
	h := new(huffCode)
	code, prev := uint16(0), uint8(0)
	for l := uint8(1); l <= maxCodeLen; l++ {
		for s := range 256 {
			if codeLengths[s] != l {
				continue
			}
			if prev != 0 {
				code = (code + 1) << (l - prev)
			}
			prev = l
			h.code[s], h.size[s] = code, l
			base := int(code) << (maxCodeLen - l)
			for i := range 1 << (maxCodeLen - l) {
				h.dec[base+i] = uint16(s) | uint16(l)<<8
			}
		}
	}
	for peek := range h.dec2 {
		e1 := h.dec[peek]
		l1 := int(e1 >> 8)
		v := uint32(e1&0xff) | 1<<16 | uint32(l1)<<24
		rest := peek << l1 & (1<<maxCodeLen - 1)
		if e2 := h.dec[rest]; l1+int(e2>>8) <= maxCodeLen {
			v = uint32(e1&0xff) | uint32(e2&0xff)<<8 | 2<<16 | uint32(l1+int(e2>>8))<<24
		}
		h.dec2[peek] = v
	}
	return h
})

// appendCoded appends the code of tail to dst.
func (h *huffCode) appendCoded(dst, tail []byte) []byte {
	var acc uint64 // pending bits, right-aligned
	n := uint(0)
	for _, b := range tail {
		acc = acc<<h.size[b] | uint64(h.code[b])
		n += uint(h.size[b])
		for n >= 8 {
			n -= 8
			dst = append(dst, byte(acc>>n))
		}
	}
	if n > 0 {
		dst = append(dst, byte(acc<<(8-n))|byte(1<<(8-n)-1))
	}
	return dst
}

// codedLen returns the length in bytes of tail's code.
func (h *huffCode) codedLen(tail []byte) int {
	bits := 0
	for _, b := range tail {
		bits += int(h.size[b])
	}
	return (bits + 7) / 8
}

// tailReader decodes one coded tail: bits pos..end of the arena a.
type tailReader struct {
	a        []byte
	pos, end uint64 // next bit to load into buf, end of the tail in bits
	buf      uint64 // loaded bits, MSB first
	n        uint64 // valid bits in buf
	h        *huffCode
	bad      bool // the code ran past the tail's end
}

// refill tops buf up to at least 56 bits (fewer at the tail's end).
func (r *tailReader) refill() {
	i := r.pos >> 3
	var v uint64
	if i+8 <= uint64(len(r.a)) {
		v = binary.BigEndian.Uint64(r.a[i:])
	} else {
		for k := uint64(0); k < 8; k++ {
			v <<= 8
			if i+k < uint64(len(r.a)) {
				v |= uint64(r.a[i+k])
			}
		}
	}
	v <<= r.pos & 7
	take := min(64-r.n, 64-r.pos&7) // valid bits of v that fit
	take = min(take, r.end-r.pos)
	if take == 0 {
		return
	}
	r.buf |= v >> (64 - take) << (64 - r.n - take)
	r.n += take
	r.pos += take
}

// next returns the next byte of the tail, or false at its end.
func (r *tailReader) next() (byte, bool) {
	if r.n < maxCodeLen {
		r.refill()
		if r.n < maxCodeLen {
			if r.n == 0 {
				return 0, false
			}
			// Fewer than 8 bits left that are all ones: the padding.
			if r.n < 8 && r.buf>>(64-r.n) == 1<<r.n-1 {
				return 0, false
			}
		}
	}
	// Bits past the end read as ones, the padding.
	peek := (r.buf | (1<<(64-r.n) - 1)) >> (64 - maxCodeLen)
	e := r.h.dec[peek]
	l := uint64(e >> 8)
	if l > r.n {
		r.bad = true
		r.n = 0
		return 0, false
	}
	r.buf <<= l
	r.n -= l
	return byte(e), true
}

// skip advances over n bytes of the tail, fewer if it ends first.
func (r *tailReader) skip(n int) {
	var buf [32]byte
	for n > 0 {
		k := min(n, len(buf))
		if r.fill(buf[:k]) < k {
			return
		}
		n -= k
	}
}

// fill decodes the tail's next len(out) bytes into out (fewer if it ends
// first) and returns how many it decoded: next in a loop, with the bit
// buffer in registers and two symbols per table lookup where they fit.
func (r *tailReader) fill(out []byte) int {
	dec2 := &r.h.dec2
	buf, n := r.buf, r.n
	i := 0
	for i < len(out) {
		if n < maxCodeLen {
			r.buf, r.n = buf, n
			r.refill()
			if r.n < maxCodeLen {
				// The tail's last bits: the careful path.
				b, ok := r.next()
				if !ok {
					return i
				}
				out[i] = b
				i++
				buf, n = r.buf, r.n
				continue
			}
			buf, n = r.buf, r.n
		}
		e := dec2[buf>>(64-maxCodeLen)]
		if e>>16&0xff == 2 && i+1 < len(out) {
			out[i] = byte(e)
			out[i+1] = byte(e >> 8)
			i += 2
			l := uint64(e >> 24)
			buf <<= l
			n -= l
			continue
		}
		// One symbol: its length is that of the first code.
		e1 := r.h.dec[buf>>(64-maxCodeLen)]
		l := uint64(e1 >> 8)
		buf <<= l
		n -= l
		out[i] = byte(e1)
		i++
	}
	r.buf, r.n = buf, n
	return i
}

// appendAll appends the rest of the tail to dst.
func (r *tailReader) appendAll(dst []byte) []byte {
	for {
		start := len(dst)
		dst = append(dst, make([]byte, 32)...)
		k := r.fill(dst[start:])
		dst = dst[:start+k]
		if k < 32 {
			return dst
		}
	}
}
