package urltree

import (
	"encoding/binary"
	"fmt"
)

// open loads an existing tree: the newest valid commit decides how many
// entries are durable; bytes after them (from a crash before the next
// commit) are ignored and later overwritten. Every durable entry is
// checked, so no later read of the arena can go out of bounds.
func (t *Tree) open() error {
	var err error
	if t.meta, err = openMeta(t.path(metaName), t.readOnly); err != nil {
		return err
	}
	c := t.meta.last
	if c.count > maxURLs {
		return fmt.Errorf("%w: %s: commit claims %d URLs, more than %d", ErrCorrupt, t.meta.path, c.count, maxURLs)
	}
	for _, f := range []struct {
		mf    **mappedFile
		name  string
		magic [8]byte
	}{{&t.nodeF, nodesName, magicNodes}, {&t.ptrF, ptrsName, magicPtrs}, {&t.arenF, arenaName, magicArena}} {
		if *f.mf, err = openMapped(t.path(f.name), t.readOnly, false); err != nil {
			return err
		}
		if err := checkHeader((*f.mf).path, (*f.mf).data, f.magic); err != nil {
			return err
		}
	}
	t.remapped()
	t.count = c.count
	if c.arenaLen > uint64(len(t.arena))-headerSize {
		return fmt.Errorf("%w: %s: %d bytes, but %d bytes of entries were committed", ErrCorrupt, t.arenF.path, len(t.arena), c.arenaLen)
	}
	t.arenaEnd = headerSize + c.arenaLen
	if blocks := (c.count + ptrBlock - 1) / ptrBlock; blocks > uint64(len(t.ptrs))/ptrRecord {
		return fmt.Errorf("%w: %s: %d block pointers, but %d URLs were committed", ErrCorrupt, t.ptrF.path, len(t.ptrs)/ptrRecord, c.count)
	}
	if err := t.checkEntries(); err != nil {
		return err
	}
	if c.flags&flagClean != 0 && uint64(len(t.nodes))/nodeWords >= c.count && t.checkNodes(c.root) == nil {
		if c.count > 0 {
			t.root = c.root
		}
	} else if err := t.rebuild(); err != nil {
		return err
	}
	if t.readOnly {
		return nil
	}
	// From here on the node file changes in place; until Close marks it
	// clean again a crash leaves it to be rebuilt.
	return t.meta.write(commit{count: t.count, arenaLen: t.arenaEnd - headerSize})
}

// checkEntries validates every durable entry: its bounds, its pointer, its
// reference (an earlier id whose URL is at least lcp bytes long) and its
// URL length.
func (t *Tree) checkEntries() error {
	lens := make([]uint16, t.count)
	a := t.arena[:t.arenaEnd]
	off := uint64(headerSize)
	bad := func(id uint64, format string, args ...any) error {
		return fmt.Errorf("%w: %s: entry %d at offset %d: %s", ErrCorrupt, t.arenF.path, id, off, fmt.Sprintf(format, args...))
	}
	for id := uint64(0); id < t.count; id++ {
		if id%ptrBlock == 0 {
			// A block may start after unused bytes (see entry.go).
			ro := binary.LittleEndian.Uint64(t.ptrs[id>>ptrShift*ptrRecord:])
			if ro < off || ro > uint64(len(a)) {
				return bad(id, "block pointer says offset %d", ro)
			}
			off = ro
		}
		blen, n := uvarint(a, off)
		if n == 0 {
			return bad(id, "bad body length")
		}
		if blen > uint64(len(a))-off-uint64(n) {
			return bad(id, "body length %d runs past the committed end %d", blen, len(a))
		}
		body := a[:off+uint64(n)+blen]
		lcp, n1 := uvarint(body, off+uint64(n))
		if n1 == 0 {
			return bad(id, "bad lcp")
		}
		hdr := uint64(n) + uint64(n1)
		if lcp > 0 {
			d, n2 := uvarint(body, off+hdr)
			switch {
			case n2 == 0 || d > id:
				return bad(id, "bad reference distance")
			case d == 0 && staticPrefix(int(lcp)) == "":
				return bad(id, "no built-in prefix of %d bytes", lcp)
			case d > 0 && lcp > uint64(lens[id-d]):
				return bad(id, "shares %d bytes with reference %d of %d bytes", lcp, id-d, lens[id-d])
			}
			hdr += uint64(n2)
		}
		if off+hdr > uint64(len(body)) {
			return bad(id, "header longer than body")
		}
		r := tailReader{a: body, pos: (off + hdr) * 8, end: uint64(len(body)) * 8, h: t.huff}
		ul := lcp
		for ul <= MaxURLLenLimit {
			if _, ok := r.next(); !ok {
				break
			}
			ul++
		}
		if r.bad {
			return bad(id, "tail code runs past its end")
		}
		if ul == 0 || ul > MaxURLLenLimit {
			return bad(id, "URL length %d", ul)
		}
		lens[id] = uint16(ul)
		off += uint64(n) + blen
	}
	if off != t.arenaEnd {
		return fmt.Errorf("%w: %s: entries end at %d, commit says %d", ErrCorrupt, t.arenF.path, off, t.arenaEnd)
	}
	return nil
}

// checkNodes checks that the node array is an AVL tree over exactly ids
// 0..count-1 with correct balances. Order is not checked: a misordered
// tree gives wrong answers but cannot make a descent fail.
func (t *Tree) checkNodes(root uint32) error {
	if t.count == 0 {
		return nil
	}
	if uint64(root) >= t.count {
		return fmt.Errorf("%w: root %d out of range", ErrCorrupt, root)
	}
	seen := make([]uint64, (t.count+63)/64)
	mark := func(x uint32) bool {
		if uint64(x) >= t.count || seen[x/64]&(1<<(x%64)) != 0 {
			return false
		}
		seen[x/64] |= 1 << (x % 64)
		return true
	}
	ns := t.nodes
	// Iterative post-order computing heights.
	type frame struct {
		x     uint32
		state uint8
		hl    int
	}
	var stack [maxHeight + 1]frame
	sp := 0
	if !mark(root) {
		return fmt.Errorf("%w: root %d", ErrCorrupt, root)
	}
	stack[0] = frame{x: root}
	h := 0 // height of the subtree just finished
	visited := uint64(1)
	for sp >= 0 {
		f := &stack[sp]
		if f.state < 2 {
			c := ns.child(f.x, int(f.state))
			if f.state == 1 {
				f.hl = h
			}
			f.state++
			if c == none {
				h = 0
				continue
			}
			if !mark(c) {
				return fmt.Errorf("%w: node %d: child %d out of range or reached twice", ErrCorrupt, f.x, c)
			}
			visited++
			if sp+1 >= len(stack) {
				return fmt.Errorf("%w: node array deeper than %d levels", ErrCorrupt, maxHeight)
			}
			sp++
			stack[sp] = frame{x: c}
			continue
		}
		hr := h
		if hr-f.hl != ns.balance(f.x) {
			return fmt.Errorf("%w: node %d: balance %d, heights say %d", ErrCorrupt, f.x, ns.balance(f.x), hr-f.hl)
		}
		h = max(hr, f.hl) + 1
		sp--
	}
	if visited != t.count {
		return fmt.Errorf("%w: tree reaches %d of %d nodes", ErrCorrupt, visited, t.count)
	}
	return nil
}

// rebuild reinserts every durable URL in id order, which recreates the
// node array exactly as the original insertions built it.
func (t *Tree) rebuild() error {
	t.recovered = true
	if t.readOnly {
		t.nodeF.close()
		t.nodeF = nil
		t.nodes = make(nodes, t.count*nodeWords)
	} else if err := t.nodeF.ensure(int64(headerSize + t.count*nodeSize)); err != nil {
		return err
	}
	t.remapped()
	t.root = none
	var buf []byte
	for id := uint32(0); uint64(id) < t.count; id++ {
		buf = t.appendURL(buf[:0], id)
		var p insertPath
		d := t.search(buf, &p)
		if d.found != none {
			return fmt.Errorf("%w: %s: URL %d repeats URL %d", ErrCorrupt, t.arenF.path, id, d.found)
		}
		t.insert(buf, &p, d, id)
	}
	return nil
}
