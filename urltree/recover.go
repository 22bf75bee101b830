package urltree

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// open loads an existing tree: the newest valid commit decides how many
// entries are durable; bytes after them (from a crash before the next
// commit) are ignored and later overwritten. Every durable entry is
// checked and every block's checksum verified, so no later read of the
// arena can go out of bounds or return a URL other than the one written.
func (t *Tree) open() error {
	var err error
	if t.meta, err = openMeta(t.path(metaName), t.readOnly); err != nil {
		return err
	}
	c := t.meta.last
	if c.count > maxURLs {
		return corrupt(t.meta.path, uint64(t.meta.lastOff), "commit claims %d URLs, more than %d", c.count, maxURLs)
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
		// Without an ID in the meta file (version 2, or an upgrade a
		// crash cut short: the meta file is written last) nothing can be
		// told; the upgrade below gives every file one.
		if id := headerID((*f.mf).data); !t.meta.id.IsZero() && id != t.meta.id {
			return foreign((*f.mf).path, id, t.meta.path, t.meta.id)
		}
	}
	t.id = t.meta.id
	if t.id.IsZero() && !t.readOnly {
		if err := t.setID(newID()); err != nil {
			return err
		}
	}
	t.remapped()
	t.count = c.count
	if c.arenaLen > uint64(len(t.arena))-headerSize {
		return corrupt(t.arenF.path, uint64(len(t.arena)), "the file ends here, but %d bytes of entries were committed (it was cut short)", c.arenaLen)
	}
	t.arenaEnd = headerSize + c.arenaLen
	if blocks := (c.count + ptrBlock - 1) / ptrBlock; blocks > uint64(len(t.ptrs))/ptrRecord {
		return corrupt(t.ptrF.path, uint64(len(t.ptrF.data)), "the file ends here after %d block pointers, but %d URLs were committed (it was cut short)", len(t.ptrs)/ptrRecord, c.count)
	}
	if err := t.checkEntries(c.tailCRC); err != nil {
		return err
	}
	if t.rebuildWhy = t.nodeProblem(c); t.rebuildWhy == "" {
		if c.count > t.lost {
			t.root = c.root
		}
	} else if err := t.rebuild(); err != nil {
		return err
	}
	if t.readOnly {
		return nil
	}
	if c.flags&flagClean == 0 {
		t.clearTail()
	}
	// From here on the node file changes in place; until Close marks it
	// clean again a crash leaves it to be rebuilt.
	return t.meta.write(t.commitRecord(0))
}

// setID gives a tree of format version 2 its ID: the array files first,
// the meta file last, so that a crash in between leaves a meta file
// without one, whose tree the next Open upgrades again.
func (t *Tree) setID(id ID) error {
	for _, f := range []struct {
		mf    *mappedFile
		magic [8]byte
	}{{t.nodeF, magicNodes}, {t.ptrF, magicPtrs}, {t.arenF, magicArena}} {
		putHeader(f.mf.data, f.magic, id)
		if err := f.mf.sync(); err != nil {
			return err
		}
	}
	if err := t.meta.setID(id); err != nil {
		return err
	}
	t.id = id
	return nil
}

// clearTail zeroes the arena past the commit: entries a crash left there
// are overwritten only as far as the new ones reach, and whole blocks of
// them beyond that still verified, so a repair that has lost the commit
// (and walks the arena as far as blocks verify) gave those dead ids back,
// their references decoded against the ids that replaced them. Zeroed, the
// arena is the committed entries, then whatever was added since, then
// nothing.
//
// The entries a crash left are contiguous, and no entry holds a run of
// zero bytes longer than its code (maxZeroRun), so the scan stops at the
// first longer run: a file extended with zeros costs it nothing.
func (t *Tree) clearTail() {
	a := t.arena
	end := t.arenaEnd // past the last nonzero byte seen
	for i := t.arenaEnd; i < uint64(len(a)) && i-end < maxZeroRun; i++ {
		if a[i] != 0 {
			end = i + 1
		}
	}
	clear(a[t.arenaEnd:end])
}

// maxZeroRun exceeds the longest run of zero bytes an entry can hold: a
// tail of MaxURLLenLimit bytes of maxCodeLen bits each.
const maxZeroRun = MaxURLLenLimit*maxCodeLen/8 + 1024

// nodeProblem says why the node file cannot be trusted for commit c, or
// "" when it can: after a clean Close its checksum matches and its
// structure is an AVL tree over the live ids.
func (t *Tree) nodeProblem(c commit) string {
	switch {
	case c.flags&flagClean == 0:
		return "the tree was not closed cleanly"
	case uint64(len(t.nodes))/nodeWords < c.count:
		return fmt.Sprintf("%s holds %d nodes, fewer than the %d URLs", t.nodeF.path, len(t.nodes)/nodeWords, c.count)
	case t.nodesCRC() != c.nodesCRC:
		return fmt.Sprintf("%s: offsets %d..%d: checksum mismatch", t.nodeF.path, headerSize, headerSize+c.count*nodeSize)
	}
	if err := t.checkNodes(c.root); err != nil {
		return fmt.Sprintf("%s: %v", t.nodeF.path, err)
	}
	return ""
}

// ptrAt returns block pointer k.
func (t *Tree) ptrAt(k uint64) uint64 { return binary.LittleEndian.Uint64(t.ptrs[k*ptrRecord:]) }

// checkEntries verifies every durable block (verifier.block) and that
// each block pointer points at its block. tailCRC is the commit's
// checksum of the last block if that is not full.
func (t *Tree) checkEntries(tailCRC uint32) error {
	v := verifier{t: t, lens: make([]uint16, t.count), tailCRC: tailCRC}
	off := uint64(headerSize)
	blocks := (t.count + ptrBlock - 1) / ptrBlock
	for k := uint64(0); k < blocks; k++ {
		ro := t.ptrAt(k)
		end, err := v.block(k, ro)
		if err == nil && ro < off {
			err = corrupt(t.ptrF.path, headerSize+k*ptrRecord, "block pointer %d says arena offset %d, inside the block before (which ends at %d)", k, ro, off)
		}
		if err != nil {
			if ro != off {
				// Does the block verify where the one before ends? Then
				// the pointer is what is damaged, not the arena.
				if _, err2 := v.block(k, off); err2 == nil {
					return corrupt(t.ptrF.path, headerSize+k*ptrRecord, "block pointer %d says arena offset %d, but its block verifies at %d", k, ro, off)
				} else if ro < headerSize || ro >= t.arenaEnd {
					return err2
				}
			}
			return err
		}
		off = end
	}
	if off != t.arenaEnd {
		return corrupt(t.arenF.path, off, "the entries end here, but the commit says %d", t.arenaEnd)
	}
	t.lost = v.lost
	return nil
}

// verifier checks blocks of entries in id order.
type verifier struct {
	t       *Tree
	lens    []uint16 // URL length of every id checked so far (0: lost)
	tailCRC uint32
	lost    uint64 // lost entries (entry.go) seen
	// v1, for Check only, reads format version 1: no block trailers, no
	// checksums to verify.
	v1 bool
	// bad, for Check only, marks the ids that cannot be recovered: those
	// of damaged blocks, and those whose reference is bad. A reference to
	// a bad id then makes the entry bad, not its block damaged.
	bad []bool
}

// block checks block k at arena offset off: the structure of its entries
// (bounds, reference, code, URL length) and its checksum. It returns the
// offset after the block's trailer.
func (v *verifier) block(k, off uint64) (uint64, error) {
	t := v.t
	a := t.arena[:t.arenaEnd]
	start := off
	first := k * ptrBlock
	last := min(first+ptrBlock, t.count)
	if off < headerSize || off > uint64(len(a)) {
		return 0, corrupt(t.ptrF.path, headerSize+k*ptrRecord, "block pointer %d says arena offset %d, outside the committed entries (%d..%d)", k, off, headerSize, len(a))
	}
	lost := uint64(0)
	for id := first; id < last; id++ {
		bad := func(format string, args ...any) error {
			return corrupt(t.arenF.path, off, "entry %d (block %d at %d): %s", id, k, start, fmt.Sprintf(format, args...))
		}
		blen, n := uvarint(a, off)
		if n == 0 {
			return 0, bad("bad body length")
		}
		if blen > uint64(len(a))-off-uint64(n) {
			return 0, bad("body length %d runs past the committed end %d", blen, len(a))
		}
		body := a[:off+uint64(n)+blen]
		lcp, n1 := uvarint(body, off+uint64(n))
		if n1 == 0 {
			return 0, bad("bad lcp")
		}
		hdr := uint64(n) + uint64(n1)
		if lcp > 0 {
			d, n2 := uvarint(body, off+hdr)
			switch {
			case n2 == 0 || d > id:
				return 0, bad("bad reference distance")
			case d == 0 && staticPrefix(int(lcp)) == "":
				return 0, bad("no built-in prefix of %d bytes", lcp)
			case d > 0 && v.bad != nil && v.bad[id-d]:
				v.bad[id] = true // its URL cannot be rebuilt
			case d > 0 && lcp > uint64(v.lens[id-d]):
				return 0, bad("shares %d bytes with reference %d of %d bytes", lcp, id-d, v.lens[id-d])
			}
			hdr += uint64(n2)
		}
		if off+hdr > uint64(len(body)) {
			return 0, bad("header longer than body")
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
			return 0, bad("tail code runs past its end")
		}
		if ul > MaxURLLenLimit {
			return 0, bad("URL length %d", ul)
		}
		if ul == 0 {
			if blen != 1 {
				return 0, bad("empty URL")
			}
			lost++ // a lost URL (entry.go)
		}
		v.lens[id] = uint16(ul)
		off += uint64(n) + blen
	}
	// One checksum over the whole block: 16 small ones cost more.
	crc := crc32.Update(blockSeed(k), castagnoli, a[start:off])
	if v.v1 {
		v.lost += lost
		return off, nil
	}
	if last-first == ptrBlock {
		if off+blockTrailer > uint64(len(a)) {
			return 0, corrupt(t.arenF.path, off, "block %d at %d: its checksum trailer runs past the committed end %d", k, start, len(a))
		}
		if got := binary.LittleEndian.Uint32(a[off:]); got != crc {
			// The end is returned too: Check looks for the next block there.
			return off + blockTrailer, corrupt(t.arenF.path, start, "block %d (entries %d..%d, %d bytes): checksum mismatch", k, first, last-1, off+blockTrailer-start)
		}
		off += blockTrailer
	} else if crc != v.tailCRC {
		return off, corrupt(t.arenF.path, start, "last block %d (entries %d..%d, %d bytes): checksum does not match the commit's", k, first, last-1, off-start)
	}
	v.lost += lost
	return off, nil
}

// checkNodes checks that the node array is an AVL tree over exactly ids
// 0..count-1 with correct balances. Order is not checked: a misordered
// tree gives wrong answers but cannot make a descent fail.
func (t *Tree) checkNodes(root uint32) error {
	if t.count == t.lost {
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
	if visited != t.count-t.lost {
		return fmt.Errorf("%w: tree reaches %d of %d nodes", ErrCorrupt, visited, t.count-t.lost)
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
		if buf = t.appendURL(buf[:0], id); len(buf) == 0 {
			continue // lost (entry.go): not in the tree
		}
		var p insertPath
		d := t.search(buf, &p)
		if d.found != none {
			return fmt.Errorf("%w: %s: URL %d repeats URL %d", ErrCorrupt, t.arenF.path, id, d.found)
		}
		t.insert(buf, &p, d, id)
	}
	return nil
}
