package urltree

// segment is a piece of a stored URL: count bytes of an entry's tail,
// after skipping skip of them, at URL positions start.. .
type segment struct {
	start, skip, count int
	e                  entry
	static             string // instead of e: bytes of a built-in prefix
}

// compareTail compares q from pos with the tail of e, after skipping skip
// of its bytes, for count bytes (all if count < 0). It returns the position
// reached and, if q differs there or ends, the sign of q - url.
func (t *Tree) compareTail(q []byte, pos int, e entry, skip, count int) (int, int) {
	r := t.reader(e)
	r.skip(skip)
	var buf [32]byte
	chunk := 8 // most comparisons end within a few bytes
	for count != 0 {
		want := chunk
		chunk = len(buf)
		if count > 0 {
			want = min(want, count)
			count -= want
		}
		k := r.fill(buf[:want])
		j := mismatch(q[pos:], buf[:k])
		pos += j
		if j < k {
			if pos >= len(q) || q[pos] < buf[j] {
				return pos, -1
			}
			return pos, 1
		}
		if k < want {
			break
		}
	}
	return pos, 0
}

// compareFrom compares q with the URL of x, both known to agree on their
// first m bytes, and returns the sign of q - url(x) and their common
// prefix length. Only the bytes from m on are decoded, and the reference
// chain is followed only until it reaches a node on the search path: q's
// common prefix with that node is known already, and url(x) shares the
// chain's prefix with it, which settles those bytes without reading them.
func (t *Tree) compareFrom(q []byte, x uint32, m int, p *insertPath) (int, int) {
	e := t.entry(x)
	m = min(m, len(q))
	var stack [4]segment // chains are short (entry.go, chooseRef)
	segs := stack[:0]
	pos := m
	if m < e.lcp {
		upto, cur, sl := e.lcp, e.ref, e.lcp
		for upto > m {
			if cur == none {
				segs = append(segs, segment{start: m, count: upto - m, static: staticPrefix(sl)})
				break
			}
			if i := p.index(cur); i >= 0 {
				if l := int(p.lcp[i]); l < upto {
					return int(p.dir[i])*2 - 1, max(l, m)
				}
				pos = upto
				break
			}
			ce := t.entry(cur)
			if ce.lcp < upto {
				s := max(ce.lcp, m)
				segs = append(segs, segment{start: s, skip: s - ce.lcp, count: upto - s, e: ce})
				upto = s
			}
			cur, sl = ce.ref, ce.lcp
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s.start+s.count <= pos {
			continue
		}
		skip := max(pos-s.start, 0)
		var c int
		if s.static != "" {
			b := s.static[s.start+skip : s.start+s.count]
			k := mismatch(q[pos:], []byte(b))
			pos += k
			if k < len(b) {
				if pos >= len(q) || q[pos] < b[k] {
					return -1, pos
				}
				return 1, pos
			}
			continue
		}
		if pos, c = t.compareTail(q, pos, s.e, s.skip+skip, s.count-skip); c != 0 {
			return c, pos
		}
	}
	pos, c := t.compareTail(q, pos, e, max(pos-e.lcp, 0), -1)
	if c != 0 {
		return c, pos
	}
	if pos < len(q) {
		return 1, pos
	}
	return 0, pos
}

// descent is where a search for a URL ended.
type descent struct {
	found    uint32 // the URL's id, or none
	lo, hi   uint32 // nearest smaller and larger URLs on the path, or none
	loL, hiL int    // q's common prefix length with lo and hi
}

// search descends from the root. Each comparison starts at the smaller of
// q's common prefix lengths with the two bounds: every URL between the
// bounds shares that prefix with q. path records the descent.
func (t *Tree) search(q []byte, path *insertPath) descent {
	d := descent{found: none, lo: none, hi: none}
	x := t.root
	ns := t.nodes
	var touch uint32
	for depth := 0; x != none && depth < maxHeight; depth++ {
		i := int(x) * nodeWords
		rec := ns[i : i+nodeWords : i+nodeWords]
		links := uint64(rec[0]) | uint64(rec[1])<<32
		l, r := uint32(links&idMask), uint32(links>>idBits&idMask)
		// Load both children now: when this step needs the arena, their
		// cache misses overlap with its own.
		touch += ns[int(l)*nodeWords] + ns[int(r)*nodeWords]
		c, lcp, ok, from := stepByKey(q, rec[2], d.loL, d.hiL)
		if !ok {
			c, lcp = t.compareFrom(q, x, from, path)
		}
		if c == 0 {
			d.found = x
			break
		}
		path.node[path.n] = x
		path.lcp[path.n] = uint32(lcp)
		if c < 0 {
			d.hi, d.hiL = x, lcp
			path.dir[path.n] = 0
			x = l
		} else {
			d.lo, d.loL = x, lcp
			path.dir[path.n] = 1
			x = r
		}
		path.n++
		if x == path.node[path.n-1] {
			x = none // a link to itself means no child
		}
	}
	path.touch = touch
	return d
}
