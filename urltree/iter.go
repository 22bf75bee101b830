package urltree

import "iter"

// Sorted yields every URL with its id in byte order. It holds the read
// lock for the whole loop, so the loop body must not call Add, Sync or
// Close. The yielded slice is only valid until the next iteration.
func (t *Tree) Sorted() iter.Seq2[uint32, []byte] {
	return func(yield func(uint32, []byte) bool) {
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.closed || t.count == 0 {
			return
		}
		var stack [maxHeight]uint32
		sp := 0
		var buf []byte
		x := t.root
		for {
			for x != none && sp < len(stack) {
				stack[sp] = x
				sp++
				x = t.nodes.left(x)
			}
			if sp == 0 {
				return
			}
			sp--
			x = stack[sp]
			buf = t.appendURL(buf[:0], x)
			if !yield(x, buf) {
				return
			}
			x = t.nodes.right(x)
		}
	}
}

// ByID yields every URL in id order, that is in order of addition (ids
// lost to damage, see Tree.Lost, are skipped). It
// takes the read lock per URL, so the loop body may call Add; URLs added
// meanwhile are yielded too.
func (t *Tree) ByID() iter.Seq2[uint32, []byte] {
	return func(yield func(uint32, []byte) bool) {
		var buf []byte
		for id := uint32(0); ; id++ {
			t.mu.RLock()
			ok := !t.closed && uint64(id) < t.count
			if ok {
				buf = t.appendURL(buf[:0], id)
			}
			t.mu.RUnlock()
			if !ok {
				return
			}
			// A lost URL (Tree.Lost) decodes to nothing: skip it.
			if len(buf) > 0 && !yield(id, buf) {
				return
			}
			if id == maxURLs-1 {
				return
			}
		}
	}
}
