package storage

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
		key := int(in[ip+3])
		key = (key << 6) ^ int(in[ip+2])
		key = (key << 5) ^ int(in[ip+1])
		key = (key << 5) ^ int(in[ip+0])
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
		if matched && !(in[mPos] == in[ip] && in[mPos+1] == in[ip+1] && in[mPos+2] == in[ip+2]) {
			matched = false
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
			for ip < inLen && in[m] == in[ip] {
				m++
				ip++
			}
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
