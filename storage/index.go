package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// url.idx begins with its header page (indexheader.go: two copies of the
// header, the checkpoint's).
//
// Entries follow: entry i (URL id i) at indexHeaderSize + indexEntrySize·i,
//
//	 0 4 segment (0: no record for this id)
//	 4 8 offset of the record in that segment
//	12 4 crc     CRC-32C of segment and offset, xor a mix of the URL id
//	             (entryCRC), so a flipped bit or an entry moved to another
//	             id's place is seen
//
// An id this directory holds no record of has the "none" entry: segment
// 0, offset 2^64-1 and its CRC, written for every id below the highest one
// set (dense). So an all-zero entry below dense is damage (a zeroed range)
// — a reader then rebuilds its view from the segments rather than take the
// id for one this directory never stored, which could make Get return an
// older fetch from another directory as the current one. At or above
// the checkpoint's dense every entry was written after the checkpoint,
// and the segments answer for those ids (re-indexed at open): an all-zero
// entry there is an id not written yet, and one failing its CRC with the
// CRC field still zero was torn by a writer killed between put's stores
// (put writes the CRC last), not damage.
//
// Version 1 had 12-byte entries without a CRC, version 2 no "none"
// entries (all-zero for no record); such an index is rebuilt from the
// segments (it is a cache of what they hold).
const (
	indexName       = "url.idx"
	indexMagic      = "KSPI"
	indexVersion    = 4
	indexHeaderSize = 4096 // two slots of indexSlotSize
	indexSlotSize   = 2048
	indexEntrySize  = 16

	indexInitialEntries = 1 << 16
	indexMaxGrowBytes   = 1 << 30 // growth step cap, so a big id does not double a huge file
	// maxIndexedID is the largest URL id a store holds: the URL tree's
	// ids are 32-bit. A record naming a larger one is damage (a record of
	// something else), and the index never grows past 64 GiB for one.
	maxIndexedID = 1<<32 - 1
)

// index is one directory's url.idx, mapped into memory.
type index struct {
	f        *os.File
	path     string
	data     []byte // the whole file, mapped
	writable bool
	// dense: every id below it has a non-zero entry. A writer raises it
	// as it sets entries (filling "none" entries below); the header keeps
	// its value at the checkpoint.
	dense uint64
	// The header in use (the intact slot with the higher seq): its
	// checkpoint; a writer's next checkpoint goes to the other slot.
	seq   uint64
	ckSeg uint32
	ckOff int64
	// torn: the other slot failed its check (reported as damage).
	torn *TornHeader
}

// createIndex writes a fresh, empty index at path (replacing any file
// there) with the checkpoint at the start of segment 1.
func createIndex(path string) error {
	f, err := createTemp(path + ".tmp")
	if err != nil {
		return err
	}
	hdr := make([]byte, indexHeaderSize)
	putIndexSlot(hdr, indexHeader{seq: 0})
	putIndexSlot(hdr, indexHeader{seq: 1})
	_, err = f.Write(hdr)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("storage: creating index %s: %w", path, err)
	}
	return nil
}

// openIndex maps the index at path. A damaged header is an error wrapping
// ErrCorrupt; the caller rebuilds the index from the segments then.
func openIndex(path string, writable bool) (*index, error) {
	flag := os.O_RDONLY
	prot := unix.PROT_READ
	if writable {
		flag = os.O_RDWR
		prot |= unix.PROT_WRITE
	}
	// Not through a link: a writer would write its entries and
	// checkpoints into the file it leads to, another store's index.
	f, err := openRegular(path, flag|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	size := fi.Size()
	if size < indexHeaderSize {
		f.Close()
		return nil, fmt.Errorf("storage: index %s: %w: file of %d bytes, shorter than its header", path, ErrCorrupt, size)
	}
	hdr := make([]byte, indexHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: reading index %s: %w", path, err)
	}
	h, torn, err := readIndexHeader(path, hdr)
	if err != nil {
		f.Close()
		return nil, err
	}
	if (size-indexHeaderSize)%indexEntrySize != 0 {
		f.Close()
		return nil, fmt.Errorf("storage: index %s: %w: file of %d bytes is not a whole number of entries", path, ErrCorrupt, size)
	}
	if want, have := h.entries, uint64(size-indexHeaderSize)/indexEntrySize; have < want {
		f.Close()
		return nil, fmt.Errorf("storage: index %s: %w: truncated: %d entries, the header says %d", path, ErrCorrupt, have, want)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: mapping index %s: %w", path, err)
	}
	dense := h.dense
	if have := uint64(size-indexHeaderSize) / indexEntrySize; dense > have {
		unix.Munmap(data)
		f.Close()
		return nil, fmt.Errorf("storage: index %s: %w: the header says entries are dense up to URL id %d, the file holds %d", path, ErrCorrupt, dense, have)
	}
	return &index{f: f, path: path, data: data, writable: writable, dense: dense,
		seq: h.seq, ckSeg: h.ckSeg, ckOff: h.ckOff, torn: torn}, nil
}

// entries is how many URL ids the mapped file has room for.
func (ix *index) entries() uint64 { return uint64(len(ix.data)-indexHeaderSize) / indexEntrySize }

// checkpoint returns the position up to which the segments are indexed.
func (ix *index) checkpoint() (seg uint32, off int64) { return ix.ckSeg, ix.ckOff }

// entryState is what an index entry holds.
type entryState uint8

const (
	entryEmpty entryState = iota // no record for this id
	entrySet                     // a record's location, checksum verified
	entryBad                     // fails its checksum, or zeroed below dense: the index is damaged
	entryZero                    // all zero (decodeEntry only): empty at or above dense, else bad
	entryTorn                    // fields set, CRC field zero (decodeEntry only): a torn put at or above dense, else bad
)

// noneOffset is the offset field of a "none" entry (segment 0).
const noneOffset = ^uint64(0)

// entryCRC is the checksum of id's entry e (its segment and offset fields
// filled in): the CRC-32C of those 12 bytes, mixed with the id so an entry
// moved or copied to another id's place fails it. It reads the fields in
// place, so computing it allocates nothing.
func entryCRC(id uint64, e []byte) uint32 {
	return crc32.Checksum(e[:12], castagnoli) ^ uint32((id*0x9e3779b97f4a7c15)>>32) ^ uint32(id)
}

// lookup returns where the record of id is, if the index has one. An
// entry that cannot be read (the file truncated under the mapping) is
// entryBad, damage.
func (ix *index) lookup(id uint64) (seg uint32, off int64, st entryState) {
	if id >= ix.entries() {
		return 0, 0, entryEmpty
	}
	seg, off, st, err := ix.decodeAt(id)
	if err != nil {
		return 0, 0, entryBad
	}
	return seg, off, ix.judge(id, st)
}

// decodeAt is decodeEntry of id's entry (id < entries()) in the mapping.
func (ix *index) decodeAt(id uint64) (seg uint32, off int64, st entryState, err error) {
	onFault := debug.SetPanicOnFault(true)
	defer func() { err = ix.fault(recover(), onFault) }()
	seg, off, st = decodeEntry(id, ix.data[indexHeaderSize+id*indexEntrySize:])
	return seg, off, st, nil
}

// entry copies id's entry (id < entries()) out of the mapping.
func (ix *index) entry(id uint64) (e [indexEntrySize]byte, err error) {
	onFault := debug.SetPanicOnFault(true)
	defer func() { err = ix.fault(recover(), onFault) }()
	copy(e[:], ix.data[indexHeaderSize+id*indexEntrySize:])
	return e, nil
}

// fault, deferred by a function touching the mapping as
//
//	onFault := debug.SetPanicOnFault(true)
//	defer func() { err = ix.fault(recover(), onFault) }()
//
// makes a fault there its error (and restores the goroutine's setting).
// The file truncated while mapped (by hand, or by another program) makes
// a touch beyond its new end a SIGBUS, which would otherwise end the
// process (a crawler reading pages back, a kspider stats) with no word of
// which file.
func (ix *index) fault(v any, onFault bool) error {
	debug.SetPanicOnFault(onFault)
	if v == nil {
		return nil
	}
	if _, fault := v.(interface{ Addr() uintptr }); !fault {
		panic(v)
	}
	return fmt.Errorf("storage: index %s: %w: the file is shorter than when it was opened (truncated while in use?): %v", ix.path, ErrCorrupt, v)
}

// judge resolves what decodeEntry found in id's entry against dense, as
// the header has it (the checkpoint's). Below it, a zeroed or torn entry
// is damage. At or above it every entry was written after the checkpoint,
// and so are the records they name, which the segments answer for (they
// are re-indexed at open): such an entry that is zero is not written yet,
// and one whose CRC field is still zero was torn by a writer killed
// between put's stores (or is being written by a live writer), not
// damage. Any other entry failing its CRC is damage wherever it is, to a
// lookup; the whole index's check (verifyIndex) calls one torn by a put
// over an earlier entry of an id with a record after the checkpoint, which
// answers for it.
func (ix *index) judge(id uint64, st entryState) entryState {
	switch {
	case (st == entryZero || st == entryTorn) && id < ix.dense:
		return entryBad
	case st == entryZero || st == entryTorn:
		return entryEmpty
	}
	return st
}

func decodeEntry(id uint64, e []byte) (seg uint32, off int64, st entryState) {
	seg = binary.LittleEndian.Uint32(e)
	off = int64(binary.LittleEndian.Uint64(e[4:]))
	crc := binary.LittleEndian.Uint32(e[12:])
	switch {
	case seg == 0 && crc == 0 && off == 0:
		return 0, 0, entryZero
	case crc != entryCRC(id, e) && crc == 0:
		return seg, off, entryTorn // put writes the CRC last
	case crc != entryCRC(id, e):
		return seg, off, entryBad
	case seg == 0 && uint64(off) == noneOffset:
		return 0, 0, entryEmpty
	case seg == 0:
		return seg, off, entryBad
	}
	return seg, off, entrySet
}

// indexVouch returns a segmentReader's vouch for segment seg, from ix: a
// record found by the search after damage is taken only if the index
// points at it. Else it may be a record inside a page's body, followed by
// more (a page that is a segment of a kspider store), and the search goes
// on. After the checkpoint too: every record reported durable was indexed
// as it was synced, and one that was not (synced as the writer died) is
// then counted in the damaged region, as is a record of this store
// superseded by a later one of its URL id, which Scan would pass over
// anyway. An entry failing its checks, or an index distrusted (set: found
// damaged), cannot tell, and the record is taken.
func indexVouch(ix *index, seg uint32, distrust *atomic.Bool) func(id uint64, off int64) bool {
	return func(id uint64, off int64) bool {
		if distrust != nil && distrust.Load() {
			return true
		}
		return ix.vouches(id, location{seg, off})
	}
}

// vouches reports whether ix answers for a record of URL id id at l that
// the search after damage found: its entry points there, or fails its
// checks and cannot tell.
func (ix *index) vouches(id uint64, l location) bool {
	s, o, st := ix.lookup(id)
	return st == entryBad || st == entrySet && (location{s, o}) == l
}

// entryOffset is where id's entry is in the file, for error messages.
func entryOffset(id uint64) int64 { return int64(indexHeaderSize + id*indexEntrySize) }

// set points id at (seg, off), growing the file first when needed.
func (ix *index) set(id uint64, seg uint32, off int64) (err error) {
	if err := ix.reserve(id); err != nil {
		return err
	}
	onFault := debug.SetPanicOnFault(true)
	defer func() { err = ix.fault(recover(), onFault) }()
	for j := ix.dense; j < id; j++ {
		// "none" (offset noneOffset): below dense no entry is zero. An
		// entry set above the dense mark is one set after the
		// checkpoint, before a crash put the mark back: the record it
		// names was durable, and is re-indexed, or, damaged, must be
		// found damaged, not taken for none.
		if _, _, st := decodeEntry(j, ix.data[indexHeaderSize+j*indexEntrySize:]); st != entrySet {
			ix.put(j, 0, -1)
		}
	}
	ix.put(id, seg, off)
	ix.dense = max(ix.dense, id+1)
	return nil
}

func (ix *index) put(id uint64, seg uint32, off int64) {
	e := ix.data[indexHeaderSize+id*indexEntrySize:]
	binary.LittleEndian.PutUint32(e, seg)
	binary.LittleEndian.PutUint64(e[4:], uint64(off))
	binary.LittleEndian.PutUint32(e[12:], entryCRC(id, e))
}

// reserve makes sure the file has room for id. It allocates the disk space
// with fallocate before mapping it, so a full disk is an error here rather
// than a SIGBUS on a later store into the mapping.
func (ix *index) reserve(id uint64) error {
	n := ix.entries()
	if id < n {
		return nil
	}
	if id > maxIndexedID {
		return fmt.Errorf("storage: index %s: URL id %d is beyond what an index can hold (%d)", ix.path, id, uint64(maxIndexedID))
	}
	want := max(id+1, n*2, indexInitialEntries)
	if step := uint64(indexMaxGrowBytes / indexEntrySize); want > id+1 && want-n > step {
		want = max(id+1, n+step)
	}
	// A URL id far beyond the others (a record of another store, say)
	// would have fallocate fill the disk before it failed: what the disk
	// cannot hold is refused before anything is allocated. A growth step
	// larger than the free space shrinks to what id needs.
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(ix.f.Fd()), &st); err == nil {
		free := st.Bavail * uint64(st.Bsize)
		if need := (id + 1 - n) * indexEntrySize; need > free {
			return fmt.Errorf("storage: index %s: URL id %d would grow the index by %d bytes, the disk has %d free: %w", ix.path, id, need, free, unix.ENOSPC)
		}
		if (want-n)*indexEntrySize > free {
			want = id + 1
		}
	}
	size := int64(indexHeaderSize + want*indexEntrySize)
	if err := fallocate(ix.f, size); err != nil {
		return fmt.Errorf("storage: growing index %s to %d bytes: %w", ix.path, size, err)
	}
	data, err := unix.Mmap(int(ix.f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("storage: mapping index %s: %w", ix.path, err)
	}
	unix.Munmap(ix.data)
	ix.data = data
	return nil
}

// fallocate extends f to size bytes with its blocks allocated. File
// systems without fallocate get a plain truncate.
func fallocate(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = f.Truncate(size)
	}
	return err
}

// sync flushes the mapped entries to disk.
func (ix *index) sync() error {
	if err := unix.Msync(ix.data, unix.MS_SYNC); err != nil {
		return fmt.Errorf("storage: syncing index %s: %w", ix.path, err)
	}
	return nil
}

// setCheckpoint records, durably, that every record before (seg, off) is
// in the index. It syncs the entries first, so the checkpoint never
// promises entries a crash could lose.
func (ix *index) setCheckpoint(seg uint32, off int64) error {
	if err := ix.sync(); err != nil {
		return err
	}
	h := indexHeader{seq: ix.seq + 1, ckSeg: seg, ckOff: off, entries: ix.entries(), dense: ix.dense}
	if err := ix.putSlot(h); err != nil {
		return err
	}
	if err := unix.Msync(ix.data[:indexHeaderSize], unix.MS_SYNC); err != nil {
		return fmt.Errorf("storage: syncing index %s: %w", ix.path, err)
	}
	ix.seq, ix.ckSeg, ix.ckOff, ix.torn = h.seq, seg, off, nil
	return nil
}

// touch runs f, which reads or writes the mapping, a fault there its error.
func (ix *index) touch(f func()) (err error) {
	onFault := debug.SetPanicOnFault(true)
	defer func() { err = ix.fault(recover(), onFault) }()
	f()
	return nil
}

// putSlot writes h into the header slot not in use.
func (ix *index) putSlot(h indexHeader) (err error) {
	onFault := debug.SetPanicOnFault(true)
	defer func() { err = ix.fault(recover(), onFault) }()
	putIndexSlot(ix.data[:indexHeaderSize], h)
	return nil
}

func (ix *index) close() error {
	var err error
	if ix.data != nil {
		err = unix.Munmap(ix.data)
		ix.data = nil
	}
	if cerr := ix.f.Close(); err == nil {
		err = cerr
	}
	return err
}
