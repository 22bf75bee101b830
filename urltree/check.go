package urltree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Finding is one thing Check found in a tree's files.
type Finding struct {
	File   string // path of the file
	Offset int64  // byte offset in it
	What   string
	// Damage is false for what a crash leaves behind and Open handles
	// without loss: bytes past the commit, a node file to rebuild.
	Damage bool
}

func (f Finding) String() string {
	kind := "note"
	if f.Damage {
		kind = "damage"
	}
	return fmt.Sprintf("%s: %s: offset %d: %s", kind, f.File, f.Offset, f.What)
}

// CheckReport is what Check found, and what a repair did.
type CheckReport struct {
	Dir      string
	URLs     uint64 // ids the commit holds (recovered from the arena if the meta is lost)
	Findings []Finding
	// Lost counts the ids whose URL cannot be read back: damaged entries,
	// entries whose reference chain passes through one, and entries an
	// earlier repair already lost. LostIDs lists the first 1000.
	Lost    uint64
	LostIDs []uint32
	// Repaired is set when a repair rewrote the tree; Quarantine is then
	// the folder the old files were moved to.
	Repaired   bool
	Quarantine string
	// ID is the tree's ID (zero before format version 3), which a
	// repair keeps, and IDFile the file it was read from.
	ID     ID
	IDFile string
	// Foreign names the files of another tree than the rest, which no
	// repair touches (it would mix the two).
	Foreign []string
	// Newer: a file is of a newer format version than this build's,
	// which neither checks nor repairs it.
	Newer bool
}

// Damaged reports whether any finding is damage (rather than the
// harmless leftovers of a crash).
func (r *CheckReport) Damaged() bool {
	for _, f := range r.Findings {
		if f.Damage {
			return true
		}
	}
	return false
}

// Check verifies the tree in dir the way bbolt check does: every header,
// both commit slots, every block of entries and its pointer, the node
// file, and the space past the committed data. It reads the files without
// changing them and reports every finding rather than stopping at the
// first. The error is for a directory it cannot read or that holds no
// tree; damage is in the report.
//
// With repair, a tree with damage is rebuilt from the entries whose blocks
// verify: every id keeps its number, and an id whose URL cannot be
// recovered becomes a lost entry (Get returns ErrLost). The new files are
// built beside the old ones, then the old ones are moved into
// dir/damaged/<UTC time>/ (never deleted) and the new ones take their
// place. A repair takes the tree's lock: while a writer has the tree open
// it fails with ErrLocked.
func Check(dir string, repair bool) (*CheckReport, error) {
	if repair {
		lock, err := openLocked(filepath.Join(dir, metaName), os.O_RDONLY)
		if err == nil {
			defer lock.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	c, err := newChecker(dir)
	if err != nil {
		return nil, err
	}
	defer c.close()
	c.run()
	if repair && c.newer {
		return &c.rep, fmt.Errorf("%w: %s: not repaired: files of a newer format version (%d is this build's)", ErrNewerFormat, dir, FormatVersion)
	}
	if repair && len(c.foreign) > 0 {
		return &c.rep, fmt.Errorf("%w: %s: not repaired: %s of another tree than the rest", ErrForeign, dir, strings.Join(c.foreign, ", "))
	}
	if repair && c.rep.Damaged() {
		if err := c.repair(); err != nil {
			return &c.rep, err
		}
	}
	return &c.rep, nil
}

// checker holds the files of one Check, mapped read-only.
type checker struct {
	rep   CheckReport
	dir   string
	files [4]*mappedFile // meta, nodes, ptrs, arena; nil if missing
	t     Tree           // a view of the files for the block verifier
	c     commit
	found bool // c is a valid commit
	v     verifier
	fixed []byte // block pointers as the arena walk found them
	v1    bool   // every file is of format version 1
	newer bool   // a file is of a newer format: no repair
	id    ID     // the tree's, which a repair keeps
	// foreign names a file of another tree than the rest: no repair,
	// which would mix the two.
	foreign []string
}

var checkNames = [4]string{metaName, nodesName, ptrsName, arenaName}
var checkMagics = [4][8]byte{magicMeta, magicNodes, magicPtrs, magicArena}

func newChecker(dir string) (*checker, error) {
	c := &checker{dir: dir, rep: CheckReport{Dir: dir}}
	present := 0
	for i, name := range checkNames {
		p := filepath.Join(dir, name)
		m, err := openMapped(p, true, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			c.close()
			return nil, err
		}
		c.files[i] = m
		present++
	}
	if present == 0 {
		return nil, fmt.Errorf("%w: %s holds none of %s, %s, %s, %s", ErrNoTree, dir, metaName, nodesName, ptrsName, arenaName)
	}
	return c, nil
}

func (c *checker) close() {
	for _, m := range c.files {
		if m != nil {
			m.close()
		}
	}
}

func (c *checker) path(i int) string { return filepath.Join(c.dir, checkNames[i]) }

func (c *checker) add(damage bool, file string, off uint64, format string, args ...any) {
	c.rep.Findings = append(c.rep.Findings, Finding{File: file, Offset: int64(off), What: fmt.Sprintf(format, args...), Damage: damage})
}

func (c *checker) addErr(err error) {
	var ce *CorruptError
	if errors.As(err, &ce) {
		c.rep.Findings = append(c.rep.Findings, Finding{File: ce.File, Offset: ce.Offset, What: ce.What, Damage: true})
		return
	}
	c.add(true, c.dir, 0, "%v", err)
}

// data returns the bytes of file i (nil if missing or empty).
func (c *checker) data(i int) []byte {
	if c.files[i] == nil {
		return nil
	}
	return c.files[i].data
}

func (c *checker) run() {
	for i := range checkNames {
		b := c.data(i)
		switch {
		case c.files[i] == nil:
			c.add(true, c.path(i), 0, "missing")
		default:
			switch err := checkHeader(c.path(i), b, checkMagics[i]); {
			case errors.Is(err, ErrOldFormat):
				c.add(true, c.path(i), 0, "format version %d, without checksums: a repair converts it to version %d", binary.LittleEndian.Uint32(b[8:]), FormatVersion)
			case errors.Is(err, ErrNewerFormat):
				c.newer, c.rep.Newer = true, true
				c.add(true, c.path(i), 0, "format version %d, newer than this build's %d: it cannot check or repair the tree", binary.LittleEndian.Uint32(b[8:]), FormatVersion)
			case err != nil:
				c.addErr(err)
			}
			if i > 0 && len(b)%4096 != 0 {
				c.add(true, c.path(i), uint64(len(b)&^4095), "file size %d is not a multiple of 4096 (junk appended, or cut short)", len(b))
			}
		}
	}
	c.checkIDs()
	// A tree of format version 1 is read without checksums; a repair
	// converts it.
	c.v1 = true
	for i := range checkNames {
		if b := c.data(i); len(b) < headerSize || binary.LittleEndian.Uint32(b[8:]) != 1 || binary.LittleEndian.Uint32(b[60:]) != 0 {
			c.v1 = false
		}
	}
	c.checkMeta()
	c.checkArena()
	c.checkNodes()
	c.checkSlack()
}

// checkIDs compares the IDs in the headers that verify with the meta
// file's or, if that one's header does not verify, with the first array
// file's that has one. An array file without one beside a meta file
// without one is an upgrade a crash cut short (Tree.setID), not damage.
func (c *checker) checkIDs() {
	var ids [4]ID
	ref := -1
	for i, name := range checkNames {
		b := c.data(i)
		if c.files[i] == nil || checkHeader(c.path(i), b, checkMagics[i]) != nil {
			continue
		}
		ids[i] = headerID(b)
		switch {
		case ref < 0 && (i == 0 || !ids[i].IsZero()):
			ref, c.id = i, ids[i]
			c.rep.ID, c.rep.IDFile = ids[i], c.path(i)
		case ref >= 0 && !c.id.IsZero() && ids[i] != c.id:
			what := "tree " + ids[i].String()
			if ids[i].IsZero() {
				what = "no tree (format version 2, no ID)"
			}
			c.add(true, c.path(i), 12, "belongs to %s, but %s to tree %s: a file copied or swapped in from another tree; no repair can mix the two: put back this tree's own %s", what, checkNames[ref], c.id, name)
			c.foreign = append(c.foreign, c.path(i))
			c.rep.Foreign = c.foreign
		}
	}
}

// checkMeta reads both commit slots and the unused space around them.
func (c *checker) checkMeta() {
	b, p := c.data(0), c.path(0)
	if b == nil {
		return
	}
	if len(b) != metaFileSize {
		c.add(true, p, uint64(min(len(b), metaFileSize)), "file is %d bytes, want %d", len(b), metaFileSize)
	}
	var seqs []uint64
	for slot, off := range metaSlotOffsets {
		if off+metaSlotSize > int64(len(b)) {
			continue
		}
		s := b[off : off+metaSlotSize]
		cm, ok := decodeCommit(s)
		if !ok {
			c.add(true, p, uint64(off), "commit slot %d: checksum mismatch", slot)
			continue
		}
		seqs = append(seqs, cm.seq)
		if !c.found || cm.seq > c.c.seq {
			c.c, c.found = cm, true
		}
	}
	if len(seqs) == 2 && seqs[0] != seqs[1] && !c.v1 {
		c.add(false, p, uint64(metaSlotOffsets[0]), "the commit slots hold commits %d and %d (a crash between their writes): commit %d holds", seqs[0], seqs[1], c.c.seq)
	}
	for _, r := range [][2]int64{{headerSize, metaSlotOffsets[0]}, {metaSlotOffsets[0] + metaSlotSize, metaSlotOffsets[1]}, {metaSlotOffsets[1] + metaSlotSize, metaFileSize}} {
		if r[1] <= int64(len(b)) && !allZero(b[r[0]:r[1]]) {
			c.add(true, p, uint64(r[0]), "unused bytes %d..%d are not zero", r[0], r[1])
		}
	}
	if !c.found {
		c.add(true, p, uint64(metaSlotOffsets[0]), "neither commit slot is valid: the URL count is taken from the blocks that verify")
	}
	if c.found && c.c.count > maxURLs {
		c.add(true, p, 0, "commit claims %d URLs, more than %d", c.c.count, maxURLs)
		c.found = false
	}
}

// checkArena walks every block: at its pointer, else where the block
// before ends. Ids of blocks that verify nowhere are lost, and so are the
// ids whose reference chain reaches one of them.
func (c *checker) checkArena() {
	t := &c.t
	t.huff = huffTables()
	t.arena = c.data(3)
	t.ptrF = &mappedFile{path: c.path(2)}
	t.arenF = &mappedFile{path: c.path(3)}
	if b := c.data(2); len(b) > headerSize {
		t.ptrs = b[headerSize:]
	}
	count, end := c.c.count, headerSize+c.c.arenaLen
	if !c.found && len(t.arena) > headerSize {
		// As many full blocks as the arena could hold (an entry takes at
		// least 2 bytes), up to the first block that verifies nowhere; a
		// last block that is not full cannot be verified without its
		// commit.
		count, end = uint64(len(t.arena)-headerSize)/2/ptrBlock*ptrBlock, uint64(len(t.arena))
	}
	if end > uint64(len(t.arena)) {
		c.add(true, c.path(3), uint64(len(t.arena)), "the file ends here, but the commit holds entries up to %d (it was cut short)", end)
		end = uint64(len(t.arena))
	}
	t.count, t.arenaEnd = min(count, maxURLs), end
	blocks := (t.count + ptrBlock - 1) / ptrBlock
	// Without a commit the count is a guess from the arena's size, 2^31
	// for a sparse terabyte, and room made for it up front took 7 GB
	// (lengths, marks, pointers) to walk a few blocks: the room grows
	// with the blocks that verify instead.
	room := t.count
	if !c.found {
		room = min(room, 1<<16)
	}
	c.v = verifier{t: t, lens: make([]uint16, room), tailCRC: c.c.tailCRC, bad: make([]bool, room), v1: c.v1}
	c.fixed = make([]byte, (room+ptrBlock-1)/ptrBlock*ptrRecord)
	off, offKnown := uint64(headerSize), true
	havePtrs := uint64(len(t.ptrs) / ptrRecord)
	for k := uint64(0); k < blocks; k++ {
		first, last := k*ptrBlock, min((k+1)*ptrBlock, t.count)
		if room < last {
			room = min(max(last, 2*room), t.count)
			c.v.lens = append(c.v.lens, make([]uint16, room-uint64(len(c.v.lens)))...)
			c.v.bad = append(c.v.bad, make([]bool, room-uint64(len(c.v.bad)))...)
			c.fixed = append(c.fixed, make([]byte, (room+ptrBlock-1)/ptrBlock*ptrRecord-uint64(len(c.fixed)))...)
		}
		ptrOff := headerSize + k*ptrRecord
		var tries []uint64
		if k < havePtrs {
			tries = append(tries, binary.LittleEndian.Uint64(t.ptrs[k*ptrRecord:]))
		} else if c.found && k == havePtrs {
			c.add(true, c.path(2), ptrOff, "block pointers %d..%d are missing (the file was cut short)", k, blocks-1)
		}
		if offKnown && (len(tries) == 0 || tries[0] != off) {
			tries = append(tries, off)
		}
		var firstErr error
		at, ok := uint64(0), false
		guess := uint64(0)
		for i, o := range tries {
			clear(c.v.bad[first:last])
			e, err := c.v.block(k, o)
			if err == nil {
				at, ok, off = o, true, e
				if i > 0 && k < havePtrs {
					c.add(true, c.path(2), ptrOff, "block pointer %d says arena offset %d, but its block verifies at %d", k, tries[0], o)
				}
				break
			}
			// Blame the arena where the block should be: at its pointer,
			// unless the pointer points nowhere near the entries.
			if firstErr == nil || (i == 1 && (tries[0] < headerSize || tries[0] >= t.arenaEnd)) {
				firstErr = err
			}
			if e > 0 && guess == 0 {
				guess = e
			}
		}
		if !c.found && !ok {
			// Without a commit, the first block that verifies nowhere
			// ends the tree.
			t.count = first
			c.v.lens, c.v.bad = c.v.lens[:first], c.v.bad[:first]
			c.fixed = c.fixed[:k*ptrRecord]
			c.add(true, c.path(3), off, "without a valid commit, the tree is taken to end before block %d (id %d)", k, first)
			break
		}
		if !ok {
			c.addErr(firstErr)
			for id := first; id < last; id++ {
				c.v.bad[id] = true
			}
			off, offKnown = guess, guess > 0
			continue
		}
		offKnown = true
		binary.LittleEndian.PutUint64(c.fixed[k*ptrRecord:], at)
	}
	c.rep.URLs = t.count
	if c.found && offKnown && off != t.arenaEnd && off != 0 {
		c.add(true, c.path(3), off, "the entries end here, but the commit says %d", t.arenaEnd)
	}
	for id := range t.count {
		if c.v.bad[id] || c.v.lens[id] == 0 {
			c.v.bad[id] = true
			c.rep.Lost++
			if len(c.rep.LostIDs) < 1000 {
				c.rep.LostIDs = append(c.rep.LostIDs, uint32(id))
			}
		}
	}
	t.lost = c.rep.Lost
}

// checkNodes checks the node file the way Open does.
func (c *checker) checkNodes() {
	t := &c.t
	b := c.data(1)
	t.nodeF = &mappedFile{path: c.path(1)}
	t.nodes = nodes(u32s(b))
	if !c.found || c.v1 {
		return // version 1 has no node checksum; the repair rebuilds it
	}
	// The node file holds every id but the lost entries written by a
	// repair, whatever the damage elsewhere.
	t.lost = c.v.lost
	defer func() { t.lost = c.rep.Lost }()
	why := t.nodeProblem(c.c)
	switch {
	case why == "":
	case c.c.flags&flagClean == 0:
		c.add(false, c.path(1), headerSize, "%s: the next Open rebuilds this file", why)
	default:
		c.add(true, c.path(1), headerSize, "%s (the next Open rebuilds this file)", why)
	}
}

// checkSlack reports non-zero bytes past the committed part of each array
// file: entries added after the last Sync before a crash, or junk. Open
// ignores them.
func (c *checker) checkSlack() {
	if !c.found {
		return
	}
	used := [4]uint64{0, headerSize + c.c.count*nodeSize, headerSize + (c.c.count+ptrBlock-1)/ptrBlock*ptrRecord, headerSize + c.c.arenaLen}
	for i := 1; i < 4; i++ {
		b := c.data(i)
		if uint64(len(b)) <= used[i] {
			continue
		}
		// From where the data ends, not the file: one extended with
		// zeros (a sparse 4 GB took 15 s) holds only holes past it.
		last := int(c.files[i].dataEnd(int64(used[i]))) - 1
		for last >= int(used[i]) && b[last] == 0 {
			last--
		}
		if last >= int(used[i]) {
			c.add(false, c.path(i), used[i], "%d bytes past the committed data are not zero (entries added after the last sync, or junk): ignored", last+1-int(used[i]))
		}
	}
}

// repair rebuilds the tree from what verified: see Check.
func (c *checker) repair() error {
	tmp := filepath.Join(c.dir, "repair.tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("urltree: repair: %w", err)
	}
	// Until the swap begins, a failure (a full disk, most likely) takes
	// the new tree away again: it was left in repair.tmp, taking as much
	// space as the tree itself on the disk that had none.
	q := filepath.Join(c.dir, "damaged", time.Now().UTC().Format("20060102T150405.000000000Z"))
	err := c.build(tmp)
	if err == nil {
		if err = os.MkdirAll(q, 0o755); err != nil {
			err = fmt.Errorf("urltree: repair: %w", err)
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// The arrays first, the meta last: a crash in between leaves a meta
	// file whose arrays are missing or new, which Open refuses or reads,
	// but never a directory without a tree that Open would start afresh.
	for _, name := range []string{arenaName, ptrsName, nodesName, metaName} {
		old, nw := filepath.Join(c.dir, name), filepath.Join(tmp, name)
		if name == metaName {
			err = os.Link(old, filepath.Join(q, name))
		} else {
			err = os.Rename(old, filepath.Join(q, name))
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("urltree: repair: quarantine %s: %w", old, err)
		}
		if err := os.Rename(nw, old); err != nil {
			return fmt.Errorf("urltree: repair: %w", err)
		}
	}
	for _, d := range []string{q, c.dir} {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("urltree: repair: %w", err)
	}
	c.rep.Repaired, c.rep.Quarantine = true, q
	return nil
}

// build writes the repaired tree into the directory tmp.
func (c *checker) build(tmp string) error {
	t := &c.t
	t.ptrs = c.fixed
	nt, err := Open(tmp, &Options{MaxURLLen: MaxURLLenLimit, id: c.id})
	if err != nil {
		return fmt.Errorf("urltree: repair: %w", err)
	}
	var buf []byte
	for id := range t.count {
		if !c.v.bad[id] {
			buf = t.appendURL(buf[:0], uint32(id))
			got, added, err := nt.Add(buf)
			if err != nil {
				nt.Close()
				return fmt.Errorf("urltree: repair: id %d: %w", id, err)
			}
			if added && uint64(got) == id {
				continue
			}
			// A URL that repeats an earlier one cannot be right.
			c.add(true, c.path(3), 0, "entry %d repeats the URL of entry %d", id, got)
			c.rep.Lost++
		}
		if err := nt.addLost(); err != nil {
			nt.Close()
			return fmt.Errorf("urltree: repair: %w", err)
		}
	}
	if err := nt.Close(); err != nil {
		return fmt.Errorf("urltree: repair: %w", err)
	}
	return nil
}

// addLost appends a lost entry (entry.go) as the next id.
func (t *Tree) addLost() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count >= maxURLs {
		return ErrFull
	}
	id := uint32(t.count)
	t.scratch = append(t.scratch[:0], 1, 0)
	if err := t.appendScratch(id); err != nil {
		return err
	}
	t.count++
	t.lost++
	return nil
}
