package storage

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// LZO1X-1 compression with reusable state.
//
// This is github.com/rasky/go-lzo's Compress1X (GPL-2.0, itself a port of
// Markus Oberhumer's miniLZO), restructured so that a compressor goroutine
// reuses its 64 KiB match dictionary and appends straight into the record
// buffer: go-lzo allocates both for every call, which at ~15,000 pages a
// second is most of the pipeline's garbage. The output is byte for byte
// what go-lzo produces (lzo_test.go checks), and go-lzo's decompressor
// reads it back.

const (
	lzoM2MaxLen    = 8
	lzoM4MaxLen    = 9
	lzoM2MaxOffset = 0x0800
	lzoM3MaxOffset = 0x4000
	lzoM4MaxOffset = 0xbfff
	lzoM3Marker    = 32
	lzoM4Marker    = 16
	lzoDBits       = 14
	lzoDMask       = 1<<lzoDBits - 1
	lzoDHigh       = lzoDMask>>1 + 1
)

// lzoCompressor is the state of one LZO1X-1 compressor.
type lzoCompressor struct {
	dict [1 << lzoDBits]int32
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
	if len(in) > lzoM2MaxLen+5 {
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
// caller; it returns how many those are.
func (c *lzoCompressor) compress(out, in []byte) ([]byte, int) {
	clear(c.dict[:])
	dict := &c.dict
	inLen := len(in)
	ipLen := inLen - lzoM2MaxLen - 5
	ii := 0
	ip := 4
	var mOff int
	for {
		// go-lzo's key, b3<<16 ^ b2<<10 ^ b1<<5 ^ b0, from one load.
		v := binary.LittleEndian.Uint32(in[ip:])
		key := int(v>>24)<<16 ^ int(v>>16&0xff)<<10 ^ int(v>>8&0xff)<<5 ^ int(v&0xff)
		dindex := ((0x21 * key) >> 5) & lzoDMask
		mPos := int(dict[dindex]) - 1
		matched := false
		if mPos >= 0 && ip != mPos && ip-mPos <= lzoM4MaxOffset {
			mOff = ip - mPos
			if mOff <= lzoM2MaxOffset || in[mPos+3] == in[ip+3] {
				matched = true
			} else {
				dindex = (dindex & (lzoDMask & 0x7ff)) ^ (lzoDHigh | 0x1f)
				mPos = int(dict[dindex]) - 1
				if mPos >= 0 && ip != mPos && ip-mPos <= lzoM4MaxOffset {
					mOff = ip - mPos
					matched = mOff <= lzoM2MaxOffset || in[mPos+3] == in[ip+3]
				}
			}
		}
		if matched && (binary.LittleEndian.Uint32(in[mPos:])^v)&0xffffff != 0 {
			matched = false // the first three bytes differ
		}
		dict[dindex] = int32(ip + 1)
		if !matched {
			ip += 1 + (ip-ii)>>5
			if ip >= ipLen {
				break
			}
			continue
		}

		if ip != ii {
			t := ip - ii
			if t <= 3 {
				out[len(out)-2] |= byte(t)
			} else if t <= 18 {
				out = append(out, byte(t-3))
			} else {
				out = append(out, 0)
				out = lzoAppendMulti(out, t-18)
			}
			out = append(out, in[ii:ii+t]...)
			ii += t
		}

		var i int
		ip += 3
		for i = 3; i < 9; i++ {
			ip++
			if in[mPos+i] != in[ip-1] {
				break
			}
		}
		if i < 9 {
			ip--
			mLen := ip - ii
			if mOff <= lzoM2MaxOffset {
				mOff--
				out = append(out, byte(((mLen-1)<<5)|((mOff&7)<<2)), byte(mOff>>3))
			} else if mOff <= lzoM3MaxOffset {
				mOff--
				out = append(out, byte(lzoM3Marker|(mLen-2)), byte((mOff&63)<<2), byte(mOff>>6))
			} else {
				mOff -= 0x4000
				out = append(out, byte(lzoM4Marker|((mOff&0x4000)>>11)|(mLen-2)), byte((mOff&63)<<2), byte(mOff>>6))
			}
		} else {
			m := mPos + lzoM2MaxLen + 1
			for ip+8 <= inLen {
				if x := binary.LittleEndian.Uint64(in[m:]) ^ binary.LittleEndian.Uint64(in[ip:]); x != 0 {
					n := bits.TrailingZeros64(x) >> 3
					m += n
					ip += n
					goto extended
				}
				m += 8
				ip += 8
			}
			for ip < inLen && in[m] == in[ip] {
				m++
				ip++
			}
		extended:
			mLen := ip - ii
			if mOff <= lzoM3MaxOffset {
				mOff--
				if mLen <= 33 {
					out = append(out, byte(lzoM3Marker|(mLen-2)))
				} else {
					out = append(out, byte(lzoM3Marker|0))
					out = lzoAppendMulti(out, mLen-33)
				}
			} else {
				mOff -= 0x4000
				if mLen <= lzoM4MaxLen {
					out = append(out, byte(lzoM4Marker|((mOff&0x4000)>>11)|(mLen-2)))
				} else {
					out = append(out, byte(lzoM4Marker|((mOff&0x4000)>>11)))
					out = lzoAppendMulti(out, mLen-lzoM4MaxLen)
				}
			}
			out = append(out, byte((mOff&63)<<2), byte(mOff>>6))
		}
		ii = ip
		if ip >= ipLen {
			break
		}
	}
	return out, inLen - ii
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
