package urltree

// segment is a piece of a stored URL: bytes b at positions start.. .
type segment struct {
	start int
	b     []byte
}

// compareFrom compares q with the URL of x, both known to agree on their
// first m bytes, and returns the sign of q - url(x) and their common
// prefix length. Only the bytes from m on are fetched: the reference chain
// is followed only as long as it still covers positions at or after m.
func (t *Tree) compareFrom(q []byte, x uint32, m int) (int, int) {
	e := t.entry(x)
	n := e.urlLen()
	m = min(m, n, len(q))
	if m >= e.lcp {
		l := m + mismatch(q[m:], e.tail[m-e.lcp:])
		return cmpAt(q, l, n, e.tail, e.lcp), l
	}
	var stack [32]segment
	segs := append(stack[:0], segment{e.lcp, e.tail})
	upto, cur := e.lcp, e.ref
	for upto > m {
		e = t.entry(cur)
		if e.lcp < upto {
			s := max(e.lcp, m)
			segs = append(segs, segment{s, e.tail[s-e.lcp : upto-e.lcp]})
			upto = s
		}
		cur = e.ref
	}
	pos := m
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		k := mismatch(q[min(pos, len(q)):], s.b)
		pos += k
		if k < len(s.b) {
			if pos >= len(q) {
				return -1, pos
			}
			if q[pos] < s.b[k] {
				return -1, pos
			}
			return 1, pos
		}
	}
	if pos < len(q) {
		return 1, pos
	}
	return 0, pos
}

// cmpAt finishes a comparison of q with a URL of length n whose bytes from
// position base on are tail, given their common prefix length l.
func cmpAt(q []byte, l, n int, tail []byte, base int) int {
	switch {
	case l == len(q) && l == n:
		return 0
	case l == len(q):
		return -1
	case l == n:
		return 1
	case q[l] < tail[l-base]:
		return -1
	default:
		return 1
	}
}

// descent is where a search for a URL ended.
type descent struct {
	found    uint32 // the URL's id, or none
	lo, hi   uint32 // nearest smaller and larger URLs on the path, or none
	loL, hiL int    // q's common prefix length with lo and hi
}

// search descends from the root. Each comparison starts at the smaller of
// q's common prefix lengths with the two bounds: every URL between the
// bounds shares that prefix with q. When path is non-nil it records the
// descent for an insertion.
func (t *Tree) search(q []byte, path *insertPath) descent {
	d := descent{found: none, lo: none, hi: none}
	x := t.root
	ns := t.nodes
	for depth := 0; x != none && depth < maxHeight; depth++ {
		c, l := t.compareFrom(q, x, min(d.loL, d.hiL))
		if c == 0 {
			d.found = x
			return d
		}
		dir := 0
		if c < 0 {
			d.hi, d.hiL = x, l
		} else {
			d.lo, d.loL = x, l
			dir = 1
		}
		if path != nil {
			path.node[path.n] = x
			path.dir[path.n] = uint8(dir)
			path.n++
		}
		x = ns.child(x, dir)
	}
	return d
}
