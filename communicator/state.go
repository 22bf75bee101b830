package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// State file (SpillDir/state), version 3: two slots of S bytes each (S a
// multiple of 512, at least 512; the file is 2S bytes and never changes
// size), each a whole copy of the state:
//
//	offset size
//	0      8    magic "kspstate"
//	8      4    version = 3
//	12     4    S, the slot size
//	16     8    write counter: the valid slot with the larger one wins
//	24     8    epoch
//	32     2    node id of the endpoint that wrote it
//	34     2    reserved, 0
//	36     4    count
//	40     14×count  entries: node id u16 | sender epoch u64 | cum u32
//	...         zeros
//	S-4    4    CRC-32C of the slot's bytes before it
//
// all big-endian. epoch is this endpoint's last epoch (the next start
// takes a larger one even if the wall clock stepped back); each entry is
// how far a sender's batches are acknowledged, so a restarted receiver
// still drops what it acknowledged. Those positions are the writer's own:
// another node taking them (a directory copied from a node, or the node
// id changed) would drop the batches its peers send it up to them, never
// delivered, as duplicates. So an endpoint refuses a state file another
// node id wrote, naming both; and a state file (or spill file) that is a
// symbolic link, whose target another directory may be using.
//
// A save overwrites the older slot in place and fdatasyncs (bbolt's meta
// pages): one write and one fdatasync, where version 1 took a temporary
// file, two fsyncs and a rename. A torn or damaged slot leaves the other,
// the previous save, which only widens what a restart may deliver again;
// the open reports it (Endpoint logs it, CheckSpill lists it). A slot
// naming one node in two entries is bad too, its checksum valid or not
// (a save writes one per node). Both slots bad is an error. The file is made whole (write to state.tmp, fsync,
// rename, fsync the directory) only when it is created, converted from
// an older version, or the entries outgrow the slots.
//
// Version 2 is version 3 without the node id (offsets 32-35 absent, the
// entries at 36). Versions 1 and 2 are still read, then rewritten as
// version 3 by the next save (the endpoint saves at once when it starts).
// They name no node, but a node never receives from itself: one holding
// an entry for the opening node's id was written by another, and is
// refused as a version 3 file of another node is (one written by a node
// that never heard from the opening node cannot be told). Version 1:
//
//	magic "kspstate" | version u32 = 1 | epoch u64 | count u32 |
//	count × (node id u16 | sender epoch u64 | cum u32) | CRC-32C u32
//
// with one CRC over every byte before it.
const (
	stateMagic     = "kspstate"
	stateVersion1  = 1
	stateVersion2  = 2
	stateVersion   = 3
	stateEntrySize = 14
	stateSlotHead2 = 36
	stateSlotHead  = 40
	stateSlotAlign = 512
)

type stateEntry struct {
	id    NodeID
	epoch uint64
	cum   uint32
}

type stateFile struct {
	path string // "" when there is no SpillDir
	self NodeID // the endpoint's node: saves record it
	last uint64
	// owner is the node that wrote the file read at open (ownerKnown:
	// version 3; older ones do not say).
	owner      NodeID
	ownerKnown bool
	version    uint32 // of the slot read at open; 0: none read
	entries    map[NodeID]stateEntry

	f       *os.File // open for in-place saves; nil: the next save makes the file whole
	slot    int64    // slot size of f
	cur     int      // the slot holding the newest save
	counter uint64   // its write counter
	// warnings are damage the open survived (a bad slot), for the log
	// and CheckSpill.
	warnings []stateWarning
	buf      []byte
}

// stateWarning is a problem found at offset off of the state file.
type stateWarning struct {
	off  int64
	what string
}

func openState(dir string, self NodeID) (*stateFile, error) {
	s := &stateFile{self: self, entries: make(map[NodeID]stateEntry)}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	s.path = filepath.Join(dir, "state")
	b, err := readStateFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	if _, err := s.parse(b); err != nil {
		return nil, fmt.Errorf("communicator: state file %s: %w (remove it to start afresh; peers may then deliver acknowledged batches again)", s.path, err)
	}
	if s.ownerKnown && s.owner != self {
		return nil, fmt.Errorf("communicator: state file %s was written by node %d, and this is node %d: its receive positions are node %d's, and taken here they would drop batches peers send node %d as already delivered; run node %d on this directory, or give node %d a directory of its own", s.path, s.owner, self, s.owner, self, s.owner, self)
	}
	if _, own := s.entries[self]; own && !s.ownerKnown {
		// The one sign an older file gives of another writer; and the
		// save at the start would rewrite it naming this node.
		return nil, fmt.Errorf("communicator: state file %s (format version %d, which names no node) holds a receive position for batches from node %d, and this is node %d, which never receives from itself: another node wrote it, and its positions taken here would drop batches peers send node %d as already delivered; run the node that wrote it on this directory, or give node %d a directory of its own", s.path, s.version, self, self, self, self)
	}
	if s.slot > 0 && s.version == stateVersion {
		if s.f, err = openNoLink(s.path, os.O_RDWR); err != nil {
			return nil, fmt.Errorf("communicator: %w", err)
		}
	}
	return s, nil
}

// parse reads a state file's contents, of any version; a problem comes
// with the offset it was found at. A version 2 or 3 file with one bad slot
// parses, with the problem in s.warnings.
func (s *stateFile) parse(b []byte) (int64, error) {
	if len(b) >= 12 && string(b[:8]) == stateMagic && binary.BigEndian.Uint32(b[8:]) == stateVersion1 {
		off, err := s.parseV1(b)
		if err == nil || len(b) < 2*stateSlotAlign || len(b)%(2*stateSlotAlign) != 0 {
			return off, err
		}
		// The size of a two-slot file (version 2 or 3): slot 0's
		// version may be what is damaged.
	}
	return s.parseV2(b)
}

func (s *stateFile) parseV1(b []byte) (int64, error) {
	const fixed = 8 + 4 + 8 + 4
	if len(b) < fixed+4 {
		return int64(len(b)), fmt.Errorf("%d bytes, shorter than a header", len(b))
	}
	n := int(binary.BigEndian.Uint32(b[20:]))
	if n > 1<<16 || len(b) != fixed+n*stateEntrySize+4 {
		return 20, fmt.Errorf("%d entries do not match the file size %d", n, len(b))
	}
	end := len(b) - 4
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return int64(end), fmt.Errorf("checksum mismatch at offset %d", end)
	}
	ents, off, err := readEntries(b[fixed:], n, fixed)
	if err != nil {
		return off, err
	}
	s.last, s.version, s.entries = binary.BigEndian.Uint64(b[12:]), stateVersion1, ents
	return 0, nil
}

// readEntries decodes the n entries at the start of b, which is at offset
// base of the file. A save writes one entry per sender, so two for one
// node under a valid checksum are not a torn write but a bug or a forged
// file, and which of its positions is right cannot be told: taking
// either could drop batches never delivered. It is refused, naming the
// node and the offsets of both.
func readEntries(b []byte, n int, base int64) (map[NodeID]stateEntry, int64, error) {
	ents := make(map[NodeID]stateEntry, n)
	for i := range n {
		r := b[i*stateEntrySize:]
		e := stateEntry{NodeID(binary.BigEndian.Uint16(r)), binary.BigEndian.Uint64(r[2:]), binary.BigEndian.Uint32(r[10:])}
		if _, dup := ents[e.id]; dup {
			at := base + int64(i*stateEntrySize)
			first := 0
			for first < i && NodeID(binary.BigEndian.Uint16(b[first*stateEntrySize:])) != e.id {
				first++
			}
			return nil, at, fmt.Errorf("two receive positions for node %d, entries at offsets %d and %d, under a valid checksum (a bug or a forged file: a save writes one per node)", e.id, base+int64(first*stateEntrySize), at)
		}
		ents[e.id] = e
	}
	return ents, 0, nil
}

// stateSlot is what one version 2 or 3 slot holds.
type stateSlot struct {
	version        uint32
	counter, epoch uint64
	owner          NodeID // version 3
	entries        map[NodeID]stateEntry
}

// checkSlot verifies the slot at off of size slot in b; a problem names
// the offset it was found at.
func checkSlot(b []byte, off, slot int64) (stateSlot, int64, error) {
	p := b[off : off+slot]
	if string(p[:8]) != stateMagic {
		return stateSlot{}, off, fmt.Errorf("bad magic at offset %d", off)
	}
	v := binary.BigEndian.Uint32(p[8:])
	if v != stateVersion && v != stateVersion2 {
		return stateSlot{}, off + 8, fmt.Errorf("format version %d at offset %d; this build reads versions %d, %d and %d", v, off+8, stateVersion1, stateVersion2, stateVersion)
	}
	end := slot - 4
	if crc32.Checksum(p[:end], castagnoli) != binary.BigEndian.Uint32(p[end:]) {
		return stateSlot{}, off + end, fmt.Errorf("checksum mismatch at offset %d", off+end)
	}
	if size := int64(binary.BigEndian.Uint32(p[12:])); size != slot {
		return stateSlot{}, off + 12, fmt.Errorf("slot size %d at offset %d in a file of two %d-byte slots", size, off+12, slot)
	}
	ss := stateSlot{version: v, counter: binary.BigEndian.Uint64(p[16:]), epoch: binary.BigEndian.Uint64(p[24:])}
	head, countAt := int64(stateSlotHead2), int64(32)
	if v == stateVersion {
		head, countAt = stateSlotHead, 36
		ss.owner = NodeID(binary.BigEndian.Uint16(p[32:]))
	}
	n := int64(binary.BigEndian.Uint32(p[countAt:]))
	if head+n*stateEntrySize > end {
		return stateSlot{}, off + countAt, fmt.Errorf("%d entries at offset %d do not fit a %d-byte slot", n, off+countAt, slot)
	}
	ents, at, err := readEntries(p[head:], int(n), off+head)
	if err != nil {
		return stateSlot{}, at, err
	}
	ss.entries = ents
	return ss, 0, nil
}

func (s *stateFile) parseV2(b []byte) (int64, error) {
	if len(b) < 2*stateSlotAlign || len(b)%(2*stateSlotAlign) != 0 {
		if len(b) < 12 {
			return int64(len(b)), fmt.Errorf("%d bytes, shorter than a header", len(b))
		}
		if string(b[:8]) != stateMagic {
			return 0, errors.New("bad magic at offset 0")
		}
		if v := binary.BigEndian.Uint32(b[8:]); v != stateVersion && v != stateVersion2 {
			return 8, fmt.Errorf("format version %d at offset 8; this build reads versions %d, %d and %d", v, stateVersion1, stateVersion2, stateVersion)
		}
		return int64(len(b)), fmt.Errorf("%d bytes: not two slots of a multiple of %d bytes", len(b), stateSlotAlign)
	}
	slot := int64(len(b) / 2)
	var good [2]stateSlot
	var offs [2]int64
	var errs [2]error
	for i := range 2 {
		good[i], offs[i], errs[i] = checkSlot(b, int64(i)*slot, slot)
	}
	pick := 0
	switch {
	case errs[0] != nil && errs[1] != nil:
		return offs[0], fmt.Errorf("neither slot is valid: slot 0: %v; slot 1: %v", errs[0], errs[1])
	case errs[0] != nil:
		pick = 1
	case errs[1] != nil:
	case good[1].counter > good[0].counter:
		pick = 1
	}
	if bad := 1 - pick; errs[bad] != nil {
		s.warnings = append(s.warnings, stateWarning{offs[bad], fmt.Sprintf("slot %d: %v (a write cut short by a crash, or damage); using slot %d, save %d: receive positions saved after it are lost, which only lets peers deliver again what they delivered", bad, errs[bad], pick, good[pick].counter)})
	}
	g := good[pick]
	s.slot, s.cur, s.counter, s.last, s.version = slot, pick, g.counter, g.epoch, g.version
	s.owner, s.ownerKnown = g.owner, g.version == stateVersion
	s.entries = g.entries
	return 0, nil
}

func (s *stateFile) enabled() bool { return s.path != "" }

func (s *stateFile) entry(id NodeID) (stateEntry, bool) {
	e, ok := s.entries[id]
	return e, ok
}

// list returns the entries read at open.
func (s *stateFile) list() []stateEntry {
	out := make([]stateEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	return out
}

// nextEpoch returns the epoch of this start: larger than the last one.
func (s *stateFile) nextEpoch(now time.Time) uint64 {
	e := newEpoch(now)
	if e <= s.last {
		e = s.last + 1
	}
	return e
}

// encodeSlot fills s.buf with a slot of size slot holding counter, epoch
// and ents.
func (s *stateFile) encodeSlot(slot int64, counter, epoch uint64, ents []stateEntry) []byte {
	if int64(cap(s.buf)) < slot {
		s.buf = make([]byte, slot)
	}
	b := s.buf[:slot]
	clear(b)
	copy(b, stateMagic)
	binary.BigEndian.PutUint32(b[8:], stateVersion)
	binary.BigEndian.PutUint32(b[12:], uint32(slot))
	binary.BigEndian.PutUint64(b[16:], counter)
	binary.BigEndian.PutUint64(b[24:], epoch)
	binary.BigEndian.PutUint16(b[32:], uint16(s.self))
	binary.BigEndian.PutUint32(b[36:], uint32(len(ents)))
	for i, e := range ents {
		r := b[stateSlotHead+i*stateEntrySize:]
		binary.BigEndian.PutUint16(r, uint16(e.id))
		binary.BigEndian.PutUint64(r[2:], e.epoch)
		binary.BigEndian.PutUint32(r[10:], e.cum)
	}
	binary.BigEndian.PutUint32(b[slot-4:], crc32.Checksum(b[:slot-4], castagnoli))
	return b
}

// save records epoch and ents: in place, in the older slot, if the file
// is open and they fit; else by making the file whole.
func (s *stateFile) save(epoch uint64, ents []stateEntry) error {
	if s.path == "" {
		return nil
	}
	need := int64(stateSlotHead + len(ents)*stateEntrySize + 4)
	var err error
	if s.f != nil && need <= s.slot {
		err = s.saveSlot(epoch, ents)
	} else {
		err = s.create(max(stateSlotAlign, (need+stateSlotAlign-1)/stateSlotAlign*stateSlotAlign), epoch, ents)
	}
	if err != nil {
		return fmt.Errorf("communicator: saving %s: %w", s.path, err)
	}
	s.last = epoch
	return nil
}

// saveSlot overwrites the older slot and fdatasyncs: the file's size and
// name do not change, so neither does its metadata.
func (s *stateFile) saveSlot(epoch uint64, ents []stateEntry) error {
	next := 1 - s.cur
	b := s.encodeSlot(s.slot, s.counter+1, epoch, ents)
	if _, err := s.f.WriteAt(b, int64(next)*s.slot); err != nil {
		return err
	}
	if err := fdatasync(s.f); err != nil {
		return err
	}
	s.cur, s.counter = next, s.counter+1
	return nil
}

// create writes the whole file, both slots the same save, to a temporary
// file and renames it over the state file.
func (s *stateFile) create(slot int64, epoch uint64, ents []stateEntry) error {
	counter := s.counter + 1
	one := s.encodeSlot(slot, counter, epoch, ents)
	b := make([]byte, 0, 2*slot)
	b = append(append(b, one...), one...)
	tmp := s.path + ".tmp"
	// Removed and made anew, never opened as found: one a crash left is
	// stale, and a symbolic link put there would have its target
	// truncated and overwritten (a system file, for a node run as root).
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(s.path))
	}
	if s.f != nil {
		// Replaced, or perhaps replaced (an error after the rename):
		// the next save makes the file whole again.
		s.f.Close()
		s.f = nil
	}
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.slot, s.cur, s.counter = f, slot, 0, counter
	return nil
}

// close closes the file kept open for saves.
func (s *stateFile) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
