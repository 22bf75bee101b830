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
	l, r := ns.left(top), ns.right(top)
	// Reconstruct the five URLs involved once.
	urls := [5]uint32{lo, hi, top, l, r}
	for i, x := range urls {
		t.ubuf[i] = t.ubuf[i][:0]
		if x != none {
			t.ubuf[i] = t.appendURL(t.ubuf[i], x)
		}
	}
	lcp := func(i, j int) int {
		if urls[i] == none || urls[j] == none {
			return 0
		}
		return mismatch(t.ubuf[i], t.ubuf[j])
	}
	ns.setKey(top, makeKey(t.ubuf[2], lcp(2, 0), lcp(2, 1)))
	if l != none {
		ns.setKey(l, makeKey(t.ubuf[3], lcp(3, 0), lcp(3, 2)))
	}
	if r != none {
		ns.setKey(r, makeKey(t.ubuf[4], lcp(4, 2), lcp(4, 1)))
	}
}
