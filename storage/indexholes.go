package storage

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// An index's tail is zero until a writer sets its entries, and the
// checks of the whole index (verifyIndex, damagedEntries) pass over it
// entry by entry. A url.idx extended by truncate(1), or copied sparse,
// may hold terabytes of never-written bytes: reading them through the
// mapping took a Scan's end hours (12 s a GiB), filling the page cache
// with zeros. The holes of the file (SEEK_HOLE) above the dense mark are
// passed over unread instead; below it a zero entry is damage, judged
// one by one as before.

// holes returns, ascending, the runs of entry ids [first, end) whose
// bytes all lie in holes of ix's file, as it was mapped. A file system
// that cannot tell reports the whole file as data: none.
func (ix *index) holes() [][2]uint64 {
	fd := int(ix.f.Fd())
	size := int64(len(ix.data))
	var out [][2]uint64
	for off := int64(indexHeaderSize); off < size; {
		hole, err := unix.Seek(fd, off, unix.SEEK_HOLE)
		if err != nil || hole >= size {
			break
		}
		data, err := unix.Seek(fd, hole, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO): // no data after it
			data = size
		case err != nil:
			return out
		}
		data = min(data, size)
		first := (hole - indexHeaderSize + indexEntrySize - 1) / indexEntrySize
		end := (data - indexHeaderSize) / indexEntrySize
		if first < end {
			out = append(out, [2]uint64{uint64(first), uint64(end)})
		}
		if data <= hole {
			break
		}
		off = data
	}
	return out
}

// holeSkip passes a loop over an index's entries over its holes above the
// dense mark.
type holeSkip struct {
	holes [][2]uint64
	dense uint64
}

func newHoleSkip(ix *index) *holeSkip { return &holeSkip{holes: ix.holes(), dense: ix.dense} }

// next returns the id at which a loop at id goes on: id, or the end of
// the hole holding it, when id is at or above the dense mark.
func (s *holeSkip) next(id uint64) uint64 {
	for len(s.holes) > 0 && s.holes[0][1] <= id {
		s.holes = s.holes[1:]
	}
	if len(s.holes) > 0 && id >= s.holes[0][0] && id >= s.dense {
		return s.holes[0][1]
	}
	return id
}

// eachWritten calls fn, under touch, with each entry of ix a writer may
// have set, ascending: the holes above the dense mark (holeSkip) and the
// zero entries there, the unwritten tail, are passed over.
func (ix *index) eachWritten(fn func(id uint64, e []byte)) error {
	n := ix.entries()
	skip := newHoleSkip(ix)
	return ix.touch(func() {
		data := ix.data[indexHeaderSize:]
		for id := uint64(0); id < n; id++ {
			if next := skip.next(id); next != id {
				id = next - 1
				continue
			}
			e := data[id*indexEntrySize : (id+1)*indexEntrySize]
			if id >= ix.dense && binary.LittleEndian.Uint64(e) == 0 && binary.LittleEndian.Uint64(e[8:]) == 0 {
				continue
			}
			fn(id, e)
		}
	})
}
