package urltree

// A tree node is one little-endian uint64, indexed by URL id:
//
//	bits  0..30  left child id
//	bits 31..61  right child id
//	bits 62..63  balance + 1 (height(right) - height(left) is -1, 0 or +1)
//
// A child field holding the node's own id means "no child": a node is never
// its own child, so 31 bits address all 2^31 ids without a spare null value.
const (
	idBits  = 31
	idMask  = 1<<idBits - 1
	maxURLs = 1 << idBits
	// none is the in-memory "no node"; it never reaches the file.
	none = ^uint32(0)
	// maxHeight bounds every descent: an AVL tree of 2^31 nodes is at
	// most 1.44*31 ≈ 45 levels high. Corrupt node files cannot loop us.
	maxHeight = 64
)

type nodes []uint64

func (ns nodes) left(x uint32) uint32 {
	c := uint32(ns[x] & idMask)
	if c == x {
		return none
	}
	return c
}

func (ns nodes) right(x uint32) uint32 {
	c := uint32(ns[x] >> idBits & idMask)
	if c == x {
		return none
	}
	return c
}

func (ns nodes) child(x uint32, dir int) uint32 {
	if dir == 0 {
		return ns.left(x)
	}
	return ns.right(x)
}

func (ns nodes) balance(x uint32) int { return int(ns[x]>>62) - 1 }

func packNode(x, l, r uint32, bal int) uint64 {
	if l == none {
		l = x
	}
	if r == none {
		r = x
	}
	return uint64(l) | uint64(r)<<idBits | uint64(bal+1)<<62
}

func (ns nodes) set(x, l, r uint32, bal int) { ns[x] = packNode(x, l, r, bal) }

func (ns nodes) setChild(x uint32, dir int, c uint32) {
	l, r := ns.left(x), ns.right(x)
	if dir == 0 {
		l = c
	} else {
		r = c
	}
	ns.set(x, l, r, ns.balance(x))
}

func (ns nodes) setBalance(x uint32, bal int) { ns.set(x, ns.left(x), ns.right(x), bal) }

// insertPath is the descent an insertion took: path[i] was left by dir[i].
type insertPath struct {
	n    int
	node [maxHeight]uint32
	dir  [maxHeight]uint8
}

// attach links the new leaf x below the end of p and rebalances, returning
// the new root. root is the root before the insertion (none if empty).
func (ns nodes) attach(root uint32, p *insertPath, x uint32) uint32 {
	ns.set(x, none, none, 0)
	if p.n == 0 {
		return x
	}
	ns.setChild(p.node[p.n-1], int(p.dir[p.n-1]), x)
	for i := p.n - 1; i >= 0; i-- {
		y := p.node[i]
		bal := ns.balance(y)
		if p.dir[i] == 1 {
			bal++
		} else {
			bal--
		}
		if bal == 0 {
			ns.setBalance(y, 0)
			return root
		}
		if bal == 1 || bal == -1 {
			ns.setBalance(y, bal)
			continue
		}
		sub := ns.rotate(y, bal)
		if i == 0 {
			return sub
		}
		ns.setChild(p.node[i-1], int(p.dir[i-1]), sub)
		return root
	}
	return root
}

// rotate restores balance at y, whose balance has become bal (±2) after an
// insertion below it, and returns the subtree's new top.
func (ns nodes) rotate(y uint32, bal int) uint32 {
	if bal > 0 {
		r := ns.right(y)
		if ns.balance(r) > 0 {
			ns.set(y, ns.left(y), ns.left(r), 0)
			ns.set(r, y, ns.right(r), 0)
			return r
		}
		rl := ns.left(r)
		b := ns.balance(rl)
		yb, rb := 0, 0
		if b > 0 {
			yb = -1
		} else if b < 0 {
			rb = 1
		}
		ns.set(y, ns.left(y), ns.left(rl), yb)
		ns.set(r, ns.right(rl), ns.right(r), rb)
		ns.set(rl, y, r, 0)
		return rl
	}
	l := ns.left(y)
	if ns.balance(l) < 0 {
		ns.set(y, ns.right(l), ns.right(y), 0)
		ns.set(l, ns.left(l), y, 0)
		return l
	}
	lr := ns.right(l)
	b := ns.balance(lr)
	yb, lb := 0, 0
	if b < 0 {
		yb = 1
	} else if b > 0 {
		lb = -1
	}
	ns.set(y, ns.right(lr), ns.right(y), yb)
	ns.set(l, ns.left(l), ns.left(lr), lb)
	ns.set(lr, l, y, 0)
	return lr
}
