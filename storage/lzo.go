package storage

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// LZO1X-1 compression with reusable state.
//
// The compressor is liblzo 2.10's lzo1x_1 algorithm (Markus Oberhumer's,
// GPL-2.0: the 4-byte hash and match check, matches grown 8 bytes at a
// time, the skip over incompressible runs) written for Go: a compressor
// goroutine reuses its match dictionary and appends straight into the
// record buffer, so compressing a page allocates nothing. On HTML it is
// about 1.5 times as fast as the allocation-free port of go-lzo's
// Compress1X (miniLZO 1.x) that it replaces, at the same ratio; its output
// differs from go-lzo's, but it is LZO1X that any LZO1X decompressor reads
// (lzo_test.go checks ours and go-lzo's; liblzo 2.10's
// lzo1x_decompress_safe was checked by hand on every page of the three
// documentation packages). The decompressor's logic is
// github.com/rasky/go-lzo's Decompress1X (GPL-2.0), with every read and
// write checked.

const (
	lzoM2MaxLen    = 8
	lzoM3MaxLen    = 33
	lzoM4MaxLen    = 9
	lzoM2MaxOffset = 0x0800
	lzoM3MaxOffset = 0x4000
	lzoM4MaxOffset = 0xbfff
	lzoM3Marker    = 32
	lzoM4Marker    = 16
	lzoDBits       = 14
	lzoDMask       = 1<<lzoDBits - 1
)

// lzoCompressor is the state of one LZO1X-1 compressor: the last position
// (modulo 1<<16) seen for each hash of 4 bytes. 32 KiB, so that it stays in
// the L1 cache beside the page being compressed.
type lzoCompressor struct {
	dict [1 << lzoDBits]uint16
}

func lzoAppendMulti(out []byte, t int) []byte {
	for t > 255 {
		out = append(out, 0)
		t -= 255
	}
	return append(out, byte(t))
}

// appendCompress appends in, LZO1X-1 compressed, to out.
func (c *lzoCompressor) appendCompress(out, in []byte) []byte {
	start := len(out)
	// LZO output is at most in + in/16 + 64 + 3 bytes.
	out = grow(out, len(in)+len(in)/16+64+3)
	t := len(in)
	if len(in) > 20 {
		out, t = c.compress(out, in)
	}
	if t > 0 {
		ii := len(in) - t
		if len(out) == start && t <= 238 {
			out = append(out, byte(17+t))
		} else if t <= 3 {
			out[len(out)-2] |= byte(t)
		} else if t <= 18 {
			out = append(out, byte(t-3))
		} else {
			out = append(out, 0)
			out = lzoAppendMulti(out, t-18)
		}
		out = append(out, in[ii:ii+t]...)
	}
	return append(out, lzoM4Marker|1, 0, 0)
}

// compress encodes in up to its last few literals, which it leaves to the
// caller; it returns how many those are. It is liblzo 2.10's lzo1x_1 loop:
// one 4-byte load both hashes a position and, compared with the load at the
// remembered position, proves a match of at least 4 bytes, which then grows
// 8 bytes at a time; a miss skips further ahead the longer the current run
// of literals (incompressible input is crossed quickly).
func (c *lzoCompressor) compress(out, in []byte) ([]byte, int) {
	clear(c.dict[:])
	dict := &c.dict
	// The caller made room for the worst case: write by index, without
	// append's checks and updates.
	o, op := out[:cap(out)], len(out)
	ii, ip := 0, 4
	for {
		var mOff int
		if ip, mOff = lzoFindMatch(dict, in, ii, ip); mOff == 0 {
			return o[:op], len(in) - ii
		}
		mPos := ip - mOff

		// The literals before the match. The first match is at ip >= 4,
		// so a run of at most 3 always follows a match, whose instruction
		// has room for its length in the low bits of its second-last byte.
		if t := ip - ii; t != 0 {
			if t <= 3 {
				o[op-2] |= byte(t)
			} else if t <= 18 {
				o[op] = byte(t - 3)
				op++
			} else {
				o[op] = 0
				op = len(lzoAppendMulti(o[:op+1], t-18))
			}
			// Short runs, the most common, are copied as 16 bytes (in
			// has 20 more after ip), the excess overwritten later.
			if t <= 16 && op+16 <= len(o) {
				binary.LittleEndian.PutUint64(o[op:], binary.LittleEndian.Uint64(in[ii:]))
				binary.LittleEndian.PutUint64(o[op+8:], binary.LittleEndian.Uint64(in[ii+8:]))
			} else {
				copy(o[op:], in[ii:ip])
			}
			op += t
		}

		mLen := 4
		for {
			if ip+mLen+8 > len(in) {
				for ip+mLen < len(in) && in[mPos+mLen] == in[ip+mLen] {
					mLen++
				}
				break
			}
			if x := binary.LittleEndian.Uint64(in[ip+mLen:]) ^ binary.LittleEndian.Uint64(in[mPos+mLen:]); x != 0 {
				mLen += bits.TrailingZeros64(x) >> 3
				break
			}
			mLen += 8
		}
		ip += mLen
		ii = ip
		switch {
		case mLen <= lzoM2MaxLen && mOff <= lzoM2MaxOffset:
			mOff--
			o[op] = byte((mLen-1)<<5 | (mOff&7)<<2)
			o[op+1] = byte(mOff >> 3)
			op += 2
			continue
		case mOff <= lzoM3MaxOffset:
			mOff--
			if mLen <= lzoM3MaxLen {
				o[op] = byte(lzoM3Marker | (mLen - 2))
				op++
			} else {
				o[op] = lzoM3Marker
				op = len(lzoAppendMulti(o[:op+1], mLen-lzoM3MaxLen))
			}
		default:
			mOff -= 0x4000
			if mLen <= lzoM4MaxLen {
				o[op] = byte(lzoM4Marker | (mOff&0x4000)>>11 | (mLen - 2))
				op++
			} else {
				o[op] = byte(lzoM4Marker | (mOff&0x4000)>>11)
				op = len(lzoAppendMulti(o[:op+1], mLen-lzoM4MaxLen))
			}
		}
		o[op] = byte(mOff << 2)
		o[op+1] = byte(mOff >> 6)
		op += 2
	}
}

// lzoFindMatch returns the first position from ip on, before the last 20
// bytes of in, where the 4 bytes there occurred before, at most lzoM4MaxOffset
// back, and the offset of that earlier occurrence; or 0 for no match. It
// records the positions it tries in dict. Between matches it steps further
// the longer the literal run since ii gets, as liblzo does, so that
// incompressible data is crossed quickly. It is a function of its own so
// that its few variables stay in registers: this loop is where the
// compressor spends most of its time.
//
//go:noinline
func lzoFindMatch(dict *[1 << lzoDBits]uint16, in []byte, ii, ip int) (int, int) {
	for ip < len(in)-20 {
		v := binary.LittleEndian.Uint32(in[ip : ip+4])
		h := (v * 0x1824429d) >> (32 - lzoDBits) & lzoDMask
		// An entry, a position modulo 1<<16, gives an offset; any offset
		// is safe to try, since the compare checks its target.
		mOff := int(uint16(ip) - dict[h])
		dict[h] = uint16(ip)
		if uint(mOff-1) < lzoM4MaxOffset && binary.LittleEndian.Uint32(in[ip-mOff:ip-mOff+4]) == v {
			return ip, mOff
		}
		ip += 1 + (ip-ii)>>5
	}
	return ip, 0
}

// lzoDecoder is the state of one lzoDecompress call.
type lzoDecoder struct {
	src, out []byte
	ip, op   int
}

func (d *lzoDecoder) read() (byte, bool) {
	if d.ip >= len(d.src) {
		return 0, false
	}
	d.ip++
	return d.src[d.ip-1], true
}

func (d *lzoDecoder) readMulti(base int) (int, bool) {
	n := 0
	for d.ip < len(d.src) {
		v := d.src[d.ip]
		d.ip++
		if v != 0 {
			return n + int(v) + base, true
		}
		n += 255
	}
	return 0, false
}

func (d *lzoDecoder) literal(n int) bool {
	if n > len(d.src)-d.ip || n > len(d.out)-d.op {
		return false
	}
	copy(d.out[d.op:], d.src[d.ip:d.ip+n])
	d.ip += n
	d.op += n
	return true
}

func (d *lzoDecoder) match(from, n int) bool {
	if from < 0 || n > len(d.out)-d.op {
		return false
	}
	if d.op-from >= n {
		copy(d.out[d.op:], d.out[from:from+n])
		d.op += n
		return true
	}
	// Overlapping: the match repeats the last op-from bytes.
	for n > 0 {
		k := copy(d.out[d.op:d.op+n], d.out[from:d.op])
		d.op += k
		n -= k
	}
	return true
}

// lzoDecompress appends the LZO1X stream src, which must decode to exactly
// rawLen bytes, to dst. Unlike go-lzo's Decompress1X, from which its logic
// comes, it checks every read and every write: a malformed or malicious
// stream is an error, never a panic or a huge allocation.
func lzoDecompress(dst, src []byte, rawLen int) ([]byte, error) {
	base := len(dst)
	dst = grow(dst, rawLen)
	d := lzoDecoder{src: src, out: dst[base : base+rawLen]}
	var t, mPos int
	var last2, b byte
	ok := true
	if b, ok = d.read(); !ok {
		goto truncated
	}
	if b > 17 {
		t = int(b) - 17
		if t < 4 {
			goto matchNext
		}
		if !d.literal(t) {
			goto bad
		}
		goto firstLiteralRun
	}
beginLoop:
	t = int(b)
	if t >= 16 {
		goto match
	}
	if t == 0 {
		if t, ok = d.readMulti(15); !ok {
			goto truncated
		}
	}
	if !d.literal(t + 3) {
		goto bad
	}
firstLiteralRun:
	if b, ok = d.read(); !ok {
		goto truncated
	}
	last2 = b
	t = int(b)
	if t >= 16 {
		goto match
	}
	mPos = d.op - (1 + lzoM2MaxOffset) - t>>2
	if b, ok = d.read(); !ok {
		goto truncated
	}
	mPos -= int(b) << 2
	if !d.match(mPos, 3) {
		goto bad
	}
	goto matchDone

match:
	t = int(b)
	last2 = b
	switch {
	case t >= 64:
		mPos = d.op - 1 - (t>>2)&7
		if b, ok = d.read(); !ok {
			goto truncated
		}
		mPos -= int(b) << 3
		t = t>>5 - 1
	case t >= 32:
		t &= 31
		if t == 0 {
			if t, ok = d.readMulti(31); !ok {
				goto truncated
			}
		}
		if len(src)-d.ip < 2 {
			goto truncated
		}
		v16 := int(src[d.ip]) | int(src[d.ip+1])<<8
		d.ip += 2
		mPos = d.op - 1 - v16>>2
		last2 = byte(v16)
	case t >= 16:
		mPos = d.op - (t&8)<<11
		t &= 7
		if t == 0 {
			if t, ok = d.readMulti(7); !ok {
				goto truncated
			}
		}
		if len(src)-d.ip < 2 {
			goto truncated
		}
		v16 := int(src[d.ip]) | int(src[d.ip+1])<<8
		d.ip += 2
		mPos -= v16 >> 2
		if mPos == d.op {
			// The end-of-stream marker.
			if d.op != rawLen {
				return nil, fmt.Errorf("LZO stream ends after %d of %d bytes", d.op, rawLen)
			}
			return dst[:base+rawLen], nil
		}
		mPos -= 0x4000
		last2 = byte(v16)
	default:
		mPos = d.op - 1 - t>>2
		if b, ok = d.read(); !ok {
			goto truncated
		}
		mPos -= int(b) << 2
		if !d.match(mPos, 2) {
			goto bad
		}
		goto matchDone
	}
	if !d.match(mPos, t+2) {
		goto bad
	}
matchDone:
	t = int(last2 & 3)
	if t == 0 {
		if b, ok = d.read(); !ok {
			goto truncated
		}
		goto beginLoop
	}
matchNext:
	if !d.literal(t) {
		goto bad
	}
	if b, ok = d.read(); !ok {
		goto truncated
	}
	goto match

truncated:
	return nil, fmt.Errorf("LZO stream truncated at byte %d of %d", d.ip, len(src))
bad:
	return nil, fmt.Errorf("malformed LZO stream at byte %d: reference outside the %d-byte output", d.ip, rawLen)
}
