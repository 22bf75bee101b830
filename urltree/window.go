package urltree

// Key words (see node.go) let most search steps decide without the arena.
const (
	keyDShift   = 25
	keyDMax     = 127 // D at or above this is stored as keyDMax: no shortcut
	keyUpperBit = 1 << 24
	keyWinMask  = 1<<24 - 1
)

// window3 returns u's bytes p..p+2, big endian, 0-padded past the end.
func window3(u []byte, p int) uint32 {
	if p >= 0 && p+3 <= len(u) {
		return uint32(u[p])<<16 | uint32(u[p+1])<<8 | uint32(u[p+2])
	}
	var w uint32
	for i := range 3 {
		w <<= 8
		if p+i < len(u) {
			w |= uint32(u[p+i])
		}
	}
	return w
}

// makeKey builds the key word of a URL u that shares loL bytes with its
// lower bound and hiL with its upper bound.
func makeKey(u []byte, loL, hiL int) uint32 {
	d, side := loL, uint32(0)
	if hiL > loL {
		d, side = hiL, keyUpperBit
	}
	if d >= keyDMax {
		return keyDMax << keyDShift
	}
	return uint32(d)<<keyDShift | side | window3(u, d)
}

// stepByKey decides the order of q and node key k from q's common prefix
// lengths with the node's bounds. ok is false when the arena must decide;
// from is then a position up to which q and the node agree.
func stepByKey(q []byte, k uint32, loL, hiL int) (c, l int, ok bool, from int) {
	d := int(k >> keyDShift)
	if d == keyDMax {
		return 0, 0, false, min(loL, hiL)
	}
	qs := loL
	if k&keyUpperBit != 0 {
		qs = hiL
		if qs < d {
			return -1, qs, true, 0 // q leaves the upper bound first: below the node
		}
		if qs > d {
			return 1, d, true, 0 // the node leaves the upper bound first
		}
	} else {
		if qs < d {
			return 1, qs, true, 0 // q leaves the lower bound first: above the node
		}
		if qs > d {
			return -1, d, true, 0
		}
	}
	// q and the node agree on exactly d bytes of the closer bound, so on
	// their first d bytes: compare the window.
	qw, w := window3(q, d), k&keyWinMask
	if qw == w {
		if qw&0xff0000 != 0 && qw&0xff00 != 0 && qw&0xff != 0 {
			return 0, 0, false, d + 3
		}
		return 0, 0, false, d
	}
	diff := qw ^ w
	for shift := 16; shift >= 0; shift -= 8 {
		if diff>>shift&0xff != 0 {
			j := (16 - shift) / 8
			if qw < w {
				return -1, d + j, true, 0
			}
			return 1, d + j, true, 0
		}
		if qw>>shift&0xff == 0 {
			// A 0 byte cannot be told from the padding past a URL's
			// end: let the arena decide.
			return 0, 0, false, d
		}
	}
	return 0, 0, false, d
}

// insert links the new node id for URL q where the search d along p ended,
// and keeps the key words right: the new leaf's bounds are those of the
// search, and a rotation moves the nodes it turns to new bounds.
func (t *Tree) insert(q []byte, p *insertPath, d descent, id uint32) {
	ns := t.nodes
	root, ri := ns.attach(t.root, p, id)
	t.root = root
	ns.setKey(id, makeKey(q, d.loL, d.hiL))
	if ri < 0 {
		return
	}
	top := root
	if ri > 0 {
		top = ns.child(p.node[ri-1], int(p.dir[ri-1]))
	}
	lo, hi := p.bounds(ri)
	rs := rotated{t: t, q: q, id: id, p: p}
	rs.nodes = [5]uint32{lo, hi, top, ns.left(top), ns.right(top)}
	ns.setKey(top, rs.key(2, 0, 1))
	if rs.nodes[3] != none {
		ns.setKey(rs.nodes[3], rs.key(3, 0, 2))
	}
	if rs.nodes[4] != none {
		ns.setKey(rs.nodes[4], rs.key(4, 2, 1))
	}
}

// rotated holds what a rotation needs to recompute key words: the bounds
// of the rotated subtree (0, 1), its new top (2) and the top's children
// (3, 4). All of them lie on the insertion's path or are the new URL, so
// their common prefixes with q are known, which mostly settles their
// common prefixes with each other without reconstructing any URL.
type rotated struct {
	t     *Tree
	q     []byte
	id    uint32
	p     *insertPath
	nodes [5]uint32
	built [5]bool
}

// rel returns how node i relates to q: side -1 below, 0 equal, +1 above,
// and their common prefix length.
func (r *rotated) rel(i int) (side, l int) {
	x := r.nodes[i]
	if x == r.id {
		return 0, len(r.q)
	}
	j := r.p.index(x)
	if j < 0 {
		return 2, 0 // not on the path: unknown
	}
	if r.p.dir[j] == 1 {
		return -1, int(r.p.lcp[j])
	}
	return 1, int(r.p.lcp[j])
}

func (r *rotated) url(i int) []byte {
	if !r.built[i] {
		r.t.ubuf[i] = r.t.appendURL(r.t.ubuf[i][:0], r.nodes[i])
		r.built[i] = true
	}
	return r.t.ubuf[i]
}

// lcp returns the common prefix length of nodes a < b.
func (r *rotated) lcp(a, b int) int {
	if r.nodes[a] == none || r.nodes[b] == none {
		return 0
	}
	sa, la := r.rel(a)
	sb, lb := r.rel(b)
	switch {
	case sa <= 0 && sb >= 0 && sa != 2 && sb != 2:
		return min(la, lb) // q lies between them
	case sa == -1 && sb == -1 && la < lb:
		return la
	case sa == 1 && sb == 1 && lb < la:
		return lb
	}
	return mismatch(r.url(a), r.url(b))
}

// key computes the key word of node z between bounds lo and hi.
func (r *rotated) key(z, lo, hi int) uint32 {
	loL, hiL := r.lcp(lo, z), r.lcp(z, hi)
	d := max(loL, hiL)
	if side, l := r.rel(z); side != 2 && d+3 <= l {
		return makeKey(r.q, loL, hiL) // q holds the window's bytes
	}
	return makeKey(r.url(z), loL, hiL)
}
