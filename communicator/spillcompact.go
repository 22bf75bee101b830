package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// A spill file is truncated back to its header when all of it is
// acknowledged at an upkeep, which steady traffic rarely allows: batches
// from the file are in flight at every upkeep, and the file held every
// item a busy run sent, growing with the crawl, all scanned again at the
// next start. So once the acknowledged part reaches compactAt bytes and
// what follows it is at most a quarter of that, the file is rewritten
// without it: the header, then the records from the acknowledged offset
// on, byte for byte, to <file>.tmp, fsynced and renamed over the file.
// Every offset after it moves down by the same amount (the caller's too:
// compact returns it). Marks in the copied part are rewritten to say
// nothing is acknowledged (their old values point into the dropped
// part), so no record changes size. A crash leaves the old file or the
// new one, each whole; a <file>.tmp a crash left is removed at the open.

// spillCompactAt is the acknowledged bytes that make a spill file worth
// rewriting; spillCompactCopy bounds what a rewrite copies (through
// memory, to rewrite the marks), as the acknowledged part may have grown
// far beyond spillCompactAt while rewrites failed.
const (
	spillCompactAt   = 64 << 20
	spillCompactCopy = 16 << 20
)

// compact rewrites the file without its bytes before off, all of them
// acknowledged, when that is worth it, and returns how far every offset
// moved down (0: not rewritten).
func (s *spill) compact(off int64) (int64, error) {
	gone, after := off-spillHeader, s.end-off
	if s.syncErr != nil || gone < s.compactAt || after > gone/4 || after > spillCompactCopy || off > s.readOff {
		return 0, nil
	}
	if after == 0 {
		return 0, nil // all acknowledged: mark truncates, cheaper
	}
	if err := s.flush(); err != nil {
		return 0, err
	}
	hdr := make([]byte, spillHeader)
	if _, err := s.f.ReadAt(hdr, 0); err != nil {
		return 0, fmt.Errorf("spill file %s: reading the header: %w", s.path, err)
	}
	tail := make([]byte, s.flushed-off) // at most a quarter of what is dropped
	if _, err := s.f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("spill file %s: reading at offset %d: %w", s.path, off, err)
	}
	if err := s.neutralMarks(tail, off); err != nil {
		s.compactAt = math.MaxInt64 // the file changed under us: not again
		return 0, err
	}
	tmp := s.path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("spill file %s: %w", s.path, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("spill file %s: %w", s.path, err)
	}
	_, err = f.Write(append(hdr, tail...))
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		if s.compactAt < math.MaxInt64/2 {
			s.compactAt *= 2 // a full disk, say: try again when there is more to gain
		}
		return 0, fmt.Errorf("spill file %s: rewriting without its %d acknowledged bytes: %w", s.path, gone, err)
	}
	// The rename is done: from here the file is the new one.
	s.f.Close()
	s.f = f
	s.end -= gone
	s.flushed -= gone
	s.readOff -= gone
	s.consumed = spillHeader
	kept := s.bad[:0]
	for _, r := range s.bad {
		if r.end > off { // those before were skipped already
			kept = append(kept, spillRegion{start: r.start - gone, end: r.end - gone, why: r.why, torn: r.torn})
		}
	}
	s.bad = kept
	s.mem.shift(gone)
	s.dirty, s.items = false, false
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		// The old file may come back after a crash, without what is
		// written to the new one from now on: no Sync may say that is
		// durable (sticky, as a failed fsync).
		s.syncErr = fmt.Errorf("spill file %s: fsync of its directory after rewriting it failed, so records written since may be lost: %w", s.path, err)
		return gone, s.syncErr
	}
	return gone, nil
}

// neutralMarks rewrites every mark record in b, the file's bytes from off
// on, to acknowledge nothing, stepping over the damaged stretches s.bad
// names.
func (s *spill) neutralMarks(b []byte, off int64) error {
	bad := s.bad
	for pos := int64(0); pos < int64(len(b)); {
		for len(bad) > 0 && bad[0].end <= off+pos {
			bad = bad[1:]
		}
		if len(bad) > 0 && bad[0].start == off+pos {
			pos = bad[0].end - off
			continue
		}
		if int64(len(b))-pos < recHead {
			return fmt.Errorf("spill file %s: no whole record at offset %d", s.path, off+pos)
		}
		n := int64(binary.BigEndian.Uint32(b[pos:]))
		if n < 1 || pos+recHead+n > int64(len(b)) {
			return fmt.Errorf("spill file %s: no whole record at offset %d", s.path, off+pos)
		}
		p := b[pos+recHead : pos+recHead+n]
		if p[0] == recMark && n == 9 {
			binary.BigEndian.PutUint64(p[1:], spillHeader)
			binary.BigEndian.PutUint32(b[pos+4:], crc32.Checksum(p, castagnoli))
		}
		pos += recHead + n
	}
	return nil
}

// shift moves the offsets memory holds down by d, after a compaction.
func (m *spillMem) shift(d int64) {
	m.from = max(m.from-d, spillHeader)
	for i := m.head; i < len(m.items); i++ {
		m.items[i].recEnd -= d
	}
}
