package communicator

import (
	"slices"
	"sync"
)

// The URL bytes of a batch are coded with a static canonical Huffman code
// (MSB first, codes at most huffMax bits) derived from byteWeights, the
// byte frequencies of a million real URLs in parts per million (every
// value at least 1, so any byte can be sent). Lower-case letters, digits
// and '/', '.', '-' take 4 to 7 bits: a URL's bytes shrink by about a
// third. The weights are part of the wire format.
const huffMax = 12

var byteWeights = [256]uint32{
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 3, 1, 1, 1, 4014, 1072, 7, 6, 6, 1, 94, 82, 15770, 40234, 100518,
	5004, 4864, 4318, 3023, 2392, 2141, 1932, 2641, 1984, 2839, 25277, 1, 1, 2843, 1, 1880,
	18, 2736, 1136, 1504, 1990, 1734, 655, 522, 355, 1057, 106, 186, 1222, 876, 1059, 511,
	1143, 105, 786, 1951, 943, 324, 277, 795, 62, 91, 102, 17, 1, 17, 1, 4532,
	1, 49312, 10725, 35166, 24234, 63689, 9134, 18276, 38767, 48648, 2868, 10489, 27957, 30934, 37687, 52262,
	48643, 1694, 40315, 45238, 89863, 20018, 8341, 18992, 4911, 7062, 2351, 1, 1, 1, 105, 1,
	26, 13, 42, 86, 6, 1, 3, 5, 17, 7, 9, 3, 5, 3, 1, 5,
	18, 9, 21, 41, 33, 76, 9, 9, 1, 202, 5, 9, 29, 63, 66, 10,
	34, 13, 21, 9, 115, 9, 5, 56, 27, 17, 15, 16, 5, 5, 1, 13,
	7, 8, 4, 11, 7, 7, 22, 9, 6, 6, 6, 10, 21, 14, 12, 22,
	1, 1, 1, 124, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	24, 10, 1, 1, 1, 1, 1, 664, 2, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 2, 118, 5, 36, 25, 33, 18, 26, 1, 1, 1, 1, 1, 12,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
}

type huffCode struct {
	code [256]uint16
	size [256]uint8
	dec  [1 << huffMax]uint16 // next huffMax bits -> symbol | length<<8
}

// huffTable builds the code once; it is read-only afterwards.
var huffTable = sync.OnceValue(func() *huffCode {
	h := new(huffCode)
	w := byteWeights
	var lens [256]uint8
	for {
		lens = huffLengths(w)
		if slices.Max(lens[:]) <= huffMax {
			break
		}
		// Too deep: flatten the weights and build again.
		for i := range w {
			w[i] = w[i]/2 + 1
		}
	}
	syms := make([]int, 256)
	for i := range syms {
		syms[i] = i
	}
	slices.SortStableFunc(syms, func(a, b int) int { return int(lens[a]) - int(lens[b]) })
	code, prev := 0, lens[syms[0]]
	for i, s := range syms {
		if i > 0 {
			code = (code + 1) << (lens[s] - prev)
		}
		prev = lens[s]
		h.code[s], h.size[s] = uint16(code), lens[s]
		base := code << (huffMax - lens[s])
		for j := range 1 << (huffMax - lens[s]) {
			h.dec[base+j] = uint16(s) | uint16(lens[s])<<8
		}
	}
	return h
})

// huffLengths returns the Huffman code length of each symbol of w.
func huffLengths(w [256]uint32) [256]uint8 {
	type node struct {
		w      uint64
		parent int
	}
	nodes := make([]node, 0, 511)
	leaves := make([]int, 256)
	for i := range leaves {
		leaves[i] = i
		nodes = append(nodes, node{uint64(w[i]), -1})
	}
	slices.SortStableFunc(leaves, func(a, b int) int { return int(w[a]) - int(w[b]) })
	// Two-queue construction: leaves in weight order, internal nodes in
	// creation order (which is weight order too).
	li, ii := 0, 256
	pick := func() int {
		if li < 256 && (ii >= len(nodes) || nodes[leaves[li]].w <= nodes[ii].w) {
			li++
			return leaves[li-1]
		}
		ii++
		return ii - 1
	}
	for len(nodes) < 511 {
		a := pick()
		b := pick()
		nodes = append(nodes, node{nodes[a].w + nodes[b].w, -1})
		nodes[a].parent, nodes[b].parent = len(nodes)-1, len(nodes)-1
	}
	var lens [256]uint8
	for i := range lens {
		d := 0
		for n := i; nodes[n].parent >= 0; n = nodes[n].parent {
			d++
		}
		lens[i] = uint8(d)
	}
	return lens
}

// bitWriter appends codes MSB first.
type bitWriter struct {
	buf []byte
	acc uint64
	n   uint
}

func (w *bitWriter) write(code uint16, size uint8) {
	w.acc = w.acc<<size | uint64(code)
	w.n += uint(size)
	for w.n >= 8 {
		w.n -= 8
		w.buf = append(w.buf, byte(w.acc>>w.n))
	}
}

// flush pads the last byte with zero bits.
func (w *bitWriter) flush() {
	if w.n > 0 {
		w.buf = append(w.buf, byte(w.acc<<(8-w.n)))
		w.n = 0
	}
}

func (w *bitWriter) reset() { w.buf, w.acc, w.n = w.buf[:0], 0, 0 }

// bitReader reads codes MSB first.
type bitReader struct {
	b   []byte
	acc uint64
	n   uint
}

// next decodes one symbol; ok is false when the bits run out.
func (r *bitReader) next(h *huffCode) (byte, bool) {
	for r.n <= 56 && len(r.b) > 0 {
		r.acc = r.acc<<8 | uint64(r.b[0])
		r.b = r.b[1:]
		r.n += 8
	}
	var peek uint64
	if r.n >= huffMax {
		peek = r.acc >> (r.n - huffMax)
	} else {
		peek = r.acc << (huffMax - r.n)
	}
	e := h.dec[peek&(1<<huffMax-1)]
	l := uint(e >> 8)
	if l > r.n {
		return 0, false
	}
	r.n -= l
	return byte(e), true
}
