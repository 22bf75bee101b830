package urltree

// A tree node is 12 bytes, indexed by URL id: two little-endian uint32
// words holding the 64-bit link word, then the key window:
//
//	bits  0..30  left child id
//	bits 31..61  right child id
//	bits 62..63  balance + 1 (height(right) - height(left) is -1, 0 or +1)
//	word 2       the key word:
//	             bits 25..31  D, the common prefix length of the node's URL
//	                          with its closer bound (127: 127 or more)
//	             bit  24      which bound is closer: 0 lower, 1 upper
//	             bits  0..23  the URL's bytes D..D+2, 0-padded past its end
//
// A node's bounds are its nearest ancestors on either side. A child field
// holding the node's own id means "no child": a node is never its own
// child, so 31 bits address all 2^31 ids without a spare null value.
//
// A search reaching a node knows how many bytes q shares with each bound.
// If q shares more or fewer bytes than D with the closer bound, the order
// of q and the node follows without reading a byte; if exactly D, the
// three window bytes nearly always settle it. Only then does a step touch
// the arena. Rotations change the bounds of the nodes they move, so they
// recompute those nodes' key words.
const (
	idBits  = 31
	idMask  = 1<<idBits - 1
	maxURLs = 1 << idBits
	// none is the in-memory "no node"; it never reaches the file.
	none = ^uint32(0)
	// maxHeight bounds every descent: an AVL tree of 2^31 nodes is at
	// most 1.44*31 ≈ 45 levels high. Corrupt node files cannot loop us.
	maxHeight = 64
	// nodeWords is the size of a node in uint32 words.
	nodeWords = 3
	nodeSize  = nodeWords * 4
)

type nodes []uint32

func (ns nodes) links(x uint32) uint64 {
	i := int(x) * nodeWords
	return uint64(ns[i]) | uint64(ns[i+1])<<32
}

func (ns nodes) left(x uint32) uint32 {
	c := uint32(ns.links(x) & idMask)
	if c == x {
		return none
	}
	return c
}

func (ns nodes) right(x uint32) uint32 {
	c := uint32(ns.links(x) >> idBits & idMask)
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

func (ns nodes) balance(x uint32) int { return int(ns.links(x)>>62) - 1 }

func (ns nodes) key(x uint32) uint32 { return ns[int(x)*nodeWords+2] }

func (ns nodes) setKey(x, k uint32) { ns[int(x)*nodeWords+2] = k }

func (ns nodes) set(x, l, r uint32, bal int) {
	if l == none {
		l = x
	}
	if r == none {
		r = x
	}
	v := uint64(l) | uint64(r)<<idBits | uint64(bal+1)<<62
	i := int(x) * nodeWords
	ns[i] = uint32(v)
	ns[i+1] = uint32(v >> 32)
}

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

// insertPath is the descent a search took: node[i] was left by dir[i]
// (0 left, 1 right, so q < node[i] exactly when dir[i] is 0), and q shares
// lcp[i] bytes with it.
type insertPath struct {
	n    int
	node [maxHeight]uint32
	lcp  [maxHeight]uint32
	dir  [maxHeight]uint8
	// touch keeps the loads search issues early from being optimised away.
	touch uint32
}

// index returns where x lies on the path, or -1. Recent nodes are the
// likeliest references, so the scan runs backwards.
func (p *insertPath) index(x uint32) int {
	for i := p.n - 1; i >= 0; i-- {
		if p.node[i] == x {
			return i
		}
	}
	return -1
}

// attach links the new leaf x below the end of p and rebalances. It
// returns the new root (root is the one before, none if empty) and, if a
// rotation happened, the path index of the node it happened at (else -1);
// the rotated subtree's top is then the child of the path node before it
// (or the root).
func (ns nodes) attach(root uint32, p *insertPath, x uint32) (uint32, int) {
	ns.set(x, none, none, 0)
	if p.n == 0 {
		return x, -1
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
			return root, -1
		}
		if bal == 1 || bal == -1 {
			ns.setBalance(y, bal)
			continue
		}
		sub := ns.rotate(y, bal)
		if i == 0 {
			return sub, 0
		}
		ns.setChild(p.node[i-1], int(p.dir[i-1]), sub)
		return root, i
	}
	return root, -1
}

// bounds returns the nearest nodes before path index i that the search
// left to the right (lower bound) and to the left (upper bound).
func (p *insertPath) bounds(i int) (lo, hi uint32) {
	lo, hi = none, none
	for j := i - 1; j >= 0 && (lo == none || hi == none); j-- {
		if p.dir[j] == 1 && lo == none {
			lo = p.node[j]
		} else if p.dir[j] == 0 && hi == none {
			hi = p.node[j]
		}
	}
	return lo, hi
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
