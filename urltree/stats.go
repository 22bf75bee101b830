package urltree

import "os"

// Stats says where a tree's bytes go and what its shape costs a lookup.
type Stats struct {
	URLs int64
	// Bytes in use, by array; preallocated file space is not counted.
	NodeBytes    int64 // tree nodes
	PointerBytes int64 // block pointers: an arena offset per 16 entries
	EntryHeaders int64 // entry length, lcp and reference fields
	TailBytes    int64 // Huffman-coded tails
	Checksums    int64 // block trailers: 4 bytes per 16 entries
	FileHeaders  int64 // file headers and the meta file
	// FileBytes is the size of the files on disk, preallocation included.
	FileBytes int64
	// MeanDepth is the mean number of nodes on the path from the root to
	// a URL (root = 1); MeanChain the mean number of reference hops a Get
	// follows (built-in prefixes, which need no memory access, not counted).
	MeanDepth float64
	MeanChain float64
}

// InUse is the total number of bytes the tree uses.
func (s Stats) InUse() int64 {
	return s.NodeBytes + s.PointerBytes + s.EntryHeaders + s.TailBytes + s.Checksums + s.FileHeaders
}

// Stats walks the whole tree (O(n)) and reports its figures.
func (t *Tree) Stats() Stats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := Stats{URLs: int64(t.count)}
	if t.closed {
		return s
	}
	s.NodeBytes = int64(t.count) * nodeSize
	s.PointerBytes = int64((t.count+ptrBlock-1)/ptrBlock) * ptrRecord
	s.FileHeaders = 3*headerSize + metaFileSize
	var chain int64
	for id := uint32(0); uint64(id) < t.count; id++ {
		e := t.entry(id)
		s.TailBytes += int64(e.end - e.tail)
		upto, cur := e.lcp, e.ref
		for upto > 0 && cur != none {
			chain++
			e = t.entry(cur)
			upto = min(upto, e.lcp)
			cur = e.ref
		}
	}
	s.Checksums = int64(t.count/ptrBlock) * blockTrailer
	s.EntryHeaders = int64(t.arenaEnd-headerSize) - s.TailBytes - s.Checksums
	for _, name := range []string{metaName, nodesName, ptrsName, arenaName} {
		if fi, err := os.Stat(t.path(name)); err == nil {
			s.FileBytes += fi.Size()
		}
	}
	if t.count > 0 {
		s.MeanChain = float64(chain) / float64(t.count)
		s.MeanDepth = float64(t.depthSum()) / float64(t.count)
	}
	return s
}

func (t *Tree) depthSum() int64 {
	var sum int64
	type frame struct {
		x     uint32
		depth int
	}
	var stack [maxHeight + 1]frame
	stack[0] = frame{t.root, 1}
	sp := 1
	for sp > 0 {
		sp--
		f := stack[sp]
		sum += int64(f.depth)
		for dir := range 2 {
			if c := t.nodes.child(f.x, dir); c != none && sp < len(stack) {
				stack[sp] = frame{c, f.depth + 1}
				sp++
			}
		}
	}
	return sum
}
