package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The header page of url.idx holds the header twice, in two slots of
// indexSlotSize bytes, as bbolt keeps two meta pages: a checkpoint writes
// the slot that does not hold the latest header, so a writer killed in the
// middle of one (its stores reach the mapping one by one) or a page not
// written whole leaves the other slot intact, one checkpoint older, and
// the index usable (the segments answer for what was written after that
// checkpoint, as after any crash). A header of sequence number seq lives
// in slot seq mod 2; a reader takes the intact slot with the higher seq.
// Each slot:
//
//	off len field
//	  0   4 magic       "KSPI"
//	  4   4 version     indexVersion
//	  8   4 entrySize   indexEntrySize
//	 12   4 reserved    0
//	 16   4 ckptSegment checkpoint: every record before (ckptSegment, ckptOffset)
//	 20   4 reserved    0
//	 24   8 ckptOffset    is in the index
//	 32   4 crc         CRC-32C of the slot's bytes 0…31 and 36…2047
//	 36   4 reserved    0
//	 40   8 entries     how many entries the file held at the checkpoint: a
//	                    shorter file was truncated
//	 48   8 dense       every URL id below it has a non-zero entry, a
//	                    record's or "none"
//	 56   8 seq         the checkpoint's number (slot seq mod 2)
//	 64     zero up to indexSlotSize
//
// Versions 1 to 3 had one header over the whole page, its CRC of bytes
// 0…31 (version 1) or 0…31 and 36…4095; such an index is rebuilt from the
// segments. Version 2 had no dense, version 1 no entries.

// indexHeader is one slot's content.
type indexHeader struct {
	seq            uint64
	ckSeg          uint32
	ckOff          int64
	entries, dense uint64
}

// putIndexSlot writes h into its slot (seq mod 2) of the header page.
func putIndexSlot(page []byte, h indexHeader) {
	i := int(h.seq % 2)
	b := page[i*indexSlotSize : (i+1)*indexSlotSize]
	clear(b)
	copy(b, indexMagic)
	binary.LittleEndian.PutUint32(b[4:], indexVersion)
	binary.LittleEndian.PutUint32(b[8:], indexEntrySize)
	binary.LittleEndian.PutUint32(b[16:], h.ckSeg)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.ckOff))
	binary.LittleEndian.PutUint64(b[40:], h.entries)
	binary.LittleEndian.PutUint64(b[48:], h.dense)
	binary.LittleEndian.PutUint64(b[56:], h.seq)
	binary.LittleEndian.PutUint32(b[32:], indexSlotCRC(b))
}

// indexSlotCRC is the checksum of slot b but its CRC field.
func indexSlotCRC(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:32], castagnoli), castagnoli, b[36:indexSlotSize])
}

// indexPageCRC is the checksum of a version 2 or 3 header page but its
// CRC field.
func indexPageCRC(h []byte) uint32 {
	return crc32.Update(crc32.Checksum(h[:32], castagnoli), castagnoli, h[36:indexHeaderSize])
}

// errOldIndex marks an intact index of an older format version: it is
// rebuilt from the segments, which is not damage.
var errOldIndex = fmt.Errorf("%w (older than this kspider's, rebuilt from the segments)", ErrVersion)

// TornHeader reports one slot of the index header failing its check while
// the other is intact: what a writer killed in the middle of a checkpoint
// leaves (the intact slot, one checkpoint older, is used, and the next
// checkpoint rewrites the other), but damage if no crash came: a stray
// write looks the same.
type TornHeader struct {
	Index string
	Slot  int    // the slot that failed
	Seq   uint64 // the checkpoint number of the slot used
	Err   error  // what was wrong with the slot that failed
}

func (e *TornHeader) Error() string {
	return fmt.Sprintf("storage: index %s: header slot %d (offset %d): %v; using slot %d (checkpoint %d), as a checkpoint interrupted by a crash leaves (the next checkpoint rewrites it)",
		e.Index, e.Slot, e.Slot*indexSlotSize, e.Err, 1-e.Slot, e.Seq)
}

func (e *TornHeader) Unwrap() error { return ErrCorrupt }

// readIndexHeader reads the header page h of the index at path: the
// latest intact slot's header, and the other slot's damage if it failed
// its check. Both slots damaged is an error wrapping ErrCorrupt, an intact
// older index errOldIndex, a newer one ErrVersion.
func readIndexHeader(path string, h []byte) (indexHeader, *TornHeader, error) {
	if v := binary.LittleEndian.Uint32(h[4:]); string(h[:4]) == indexMagic && v < indexVersion {
		crc := binary.LittleEndian.Uint32(h[32:])
		if v == 1 && crc == crc32.Checksum(h[:32], castagnoli) || v > 1 && crc == indexPageCRC(h) {
			return indexHeader{}, nil, fmt.Errorf("storage: index %s: format version %d, this kspider writes %d: %w", path, v, indexVersion, errOldIndex)
		}
	}
	var (
		hs   [2]indexHeader
		errs [2]error
	)
	for i := range hs {
		hs[i], errs[i] = readIndexSlot(h[i*indexSlotSize:(i+1)*indexSlotSize], i)
	}
	switch {
	case errs[0] == nil && errs[1] == nil:
		if hs[1].seq > hs[0].seq {
			return hs[1], nil, nil
		}
		return hs[0], nil, nil
	case errors.Is(errs[0], ErrVersion):
		// A newer kspider's checkpoint: refuse, whatever the other slot.
		return indexHeader{}, nil, fmt.Errorf("storage: index %s: %w", path, errs[0])
	case errors.Is(errs[1], ErrVersion):
		return indexHeader{}, nil, fmt.Errorf("storage: index %s: %w", path, errs[1])
	case errs[0] == nil || errs[1] == nil:
		good := 0
		if errs[0] != nil {
			good = 1
		}
		return hs[good], &TornHeader{Index: path, Slot: 1 - good, Seq: hs[good].seq, Err: errs[1-good]}, nil
	}
	return indexHeader{}, nil, fmt.Errorf("storage: index %s: %w: both header slots are damaged: slot 0: %v; slot 1: %v", path, ErrCorrupt, errs[0], errs[1])
}

// readIndexSlot checks and decodes slot i of the header page.
func readIndexSlot(b []byte, i int) (indexHeader, error) {
	v := binary.LittleEndian.Uint32(b[4:])
	h := indexHeader{
		ckSeg:   binary.LittleEndian.Uint32(b[16:]),
		ckOff:   int64(binary.LittleEndian.Uint64(b[24:])),
		entries: binary.LittleEndian.Uint64(b[40:]),
		dense:   binary.LittleEndian.Uint64(b[48:]),
		seq:     binary.LittleEndian.Uint64(b[56:]),
	}
	switch {
	case binary.LittleEndian.Uint32(b[32:]) != indexSlotCRC(b):
		return h, fmt.Errorf("%w: CRC-32C mismatch", ErrCorrupt)
	case string(b[:4]) != indexMagic:
		return h, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	case v > indexVersion:
		return h, fmt.Errorf("%w: format version %d, this kspider reads version %d (older ones are rebuilt from the segments)", ErrVersion, v, indexVersion)
	case v < indexVersion:
		return h, fmt.Errorf("%w: format version %d in a slot of version %d's two", ErrCorrupt, v, indexVersion)
	case binary.LittleEndian.Uint32(b[8:]) != indexEntrySize:
		return h, fmt.Errorf("%w: entry size %d", ErrCorrupt, binary.LittleEndian.Uint32(b[8:]))
	case int(h.seq%2) != i:
		return h, fmt.Errorf("%w: holds checkpoint %d, which belongs in slot %d", ErrCorrupt, h.seq, h.seq%2)
	}
	return h, nil
}
