package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
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
// on to <file>.tmp, fsynced and renamed over the file. Every offset after
// it moves down by the same amount (the peer's too). Each record copied
// is checked against its checksum at its old place and given the one of
// its new place (the checksum covers the offset, spill.go), in the
// current version whatever the old file's; marks in the copied part are
// rewritten to the same place in the new file (those into the dropped
// part: to nothing acknowledged), so no record changes size. A crash leaves the old file or the new one, each
// whole; a <file>.tmp a crash left is removed at the open.
//
// The copy (up to spillCompactCopy bytes, and an fsync) is made without
// the peer's lock, by a goroutine of its own: with the lock held the
// peer's sends, acknowledgements and stats waited for it. Records
// appended meanwhile (items, marks) are copied after it, in rounds of
// at most spillCompactStep bytes without the lock, and the last round,
// the fsync, the rename and the move of every offset under it, so that
// nothing appended or acknowledged is left out.

// spillCompactAt is the acknowledged bytes that make a spill file worth
// rewriting; spillCompactCopy bounds what a rewrite copies (through
// memory, to rewrite the marks), as the acknowledged part may have grown
// far beyond spillCompactAt while rewrites failed. spillCompactStep is
// what is copied under the lock at most, but for a last round when
// records kept coming faster than the copy (spillCompactRounds).
const (
	spillCompactAt     = 64 << 20
	spillCompactCopy   = 16 << 20
	spillCompactStep   = 256 << 10
	spillCompactRounds = 4
)

// spillCompaction is a rewrite of a spill file under way.
type spillCompaction struct {
	path string
	old  *os.File // the file being rewritten
	// version is the old file's format (recSum); the new file has
	// spillVersion.
	version uint16
	maxURL  int
	tmp     *os.File // <path>.tmp, the new file
	off     int64    // the old file's bytes before off are dropped
	copied  int64    // the old file's bytes before copied are in tmp
	bad     []spillRegion
	err     error
	hook    func() // tests: called before each copy without the lock
	// cut: the file shrank under the rewrite (shrank, with the peer's
	// lock held, as compactFinish reads it): the copy holds records the
	// cut took, at offsets the endpoint counts no more.
	cut bool
}

// compactBegin starts a rewrite of the file without its bytes before
// off, all of them acknowledged, when that is worth it (nil: not now).
// The caller copies with c.copyTo, then calls compactFinish with the
// peer's lock held; the copy itself needs no lock.
func (s *spill) compactBegin(off int64) (*spillCompaction, error) {
	gone, after := off-spillHeader, s.end-off
	if s.compacting != nil || s.syncErr != nil || gone < s.compactAt || after > gone/4 || after > spillCompactCopy || off > s.readOff {
		return nil, nil
	}
	if after == 0 {
		return nil, nil // all acknowledged: mark truncates, cheaper
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	f, err := s.compactCreate()
	if err != nil {
		if s.compactAt < math.MaxInt64/2 {
			s.compactAt *= 2 // a full disk, say: try again when there is more to gain
		}
		return nil, err
	}
	c := &spillCompaction{path: s.path, old: s.f, version: s.version, maxURL: s.maxURL, tmp: f, off: off, copied: off, hook: s.compactHook}
	for _, r := range s.bad {
		if r.end > off { // those before were skipped already
			c.bad = append(c.bad, r)
		}
	}
	s.compacting = c
	return c, nil
}

// compactCreate makes <path>.tmp anew, holding a header of the current
// version.
func (s *spill) compactCreate() (*os.File, error) {
	hdr := spillHeaderBytes(s.self, s.peer)
	tmp := s.path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("spill file %s: %w", s.path, err)
	}
	// Not O_APPEND: it becomes the file, which flush writes at offsets.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("spill file %s: %w", s.path, err)
	}
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("spill file %s: writing %s: %w", s.path, tmp, err)
	}
	return f, nil
}

// copyTo appends the old file's records from c.copied to to (a record
// boundary) to the new file, their marks moved down; the first error
// stays in c.err.
func (c *spillCompaction) copyTo(to int64) {
	if c.err != nil || to <= c.copied {
		return
	}
	if c.hook != nil {
		c.hook()
	}
	b := make([]byte, to-c.copied)
	if _, err := c.old.ReadAt(b, c.copied); err != nil && !errors.Is(err, io.EOF) {
		c.err = fmt.Errorf("spill file %s: reading at offset %d: %w", c.path, c.copied, err)
		return
	}
	if err := c.moveMarks(b, c.copied); err != nil {
		c.err = err
		return
	}
	if _, err := c.tmp.WriteAt(b, c.copied-(c.off-spillHeader)); err != nil {
		c.err = fmt.Errorf("spill file %s: rewriting without its %d acknowledged bytes: %w", c.path, c.off-spillHeader, err)
		return
	}
	c.copied = to
}

// moveMarks rewrites every record in b, the old file's bytes from off
// on, for its place in the new file: its checksum, and a mark's offset
// (nothing acknowledged, if it names the dropped part). Damage is copied
// as it is, to be skipped by the reader or the next open as it would have
// been in the old file: the damaged stretches c.bad names, and a record
// that fails (damage since the open), after which the walk goes on at the
// next record that verifies, as the open's scan does. Giving up there
// stopped rewrites for the rest of the run, for one bad sector. A record
// failing is not given a new checksum: that would make damage pass for
// intact.
func (c *spillCompaction) moveMarks(b []byte, off int64) error {
	bad := c.bad
	gone := c.off - spillHeader
	w := &spillWindow{r: bytesAt{b, off}, size: off + int64(len(b)), version: c.version}
	for pos := int64(0); pos < int64(len(b)); {
		for len(bad) > 0 && bad[0].end <= off+pos {
			bad = bad[1:]
		}
		if len(bad) > 0 && bad[0].start == off+pos {
			pos = bad[0].end - off
			continue
		}
		p, prob, err := w.record(off+pos, c.maxURL)
		if err == nil && prob.kind != probNone {
			var next int64
			next, err = w.resync(off+pos+1, c.maxURL)
			pos = next - off
			continue
		}
		if err != nil {
			return fmt.Errorf("spill file %s: %w", c.path, err)
		}
		n := int64(len(p))
		p = b[pos+recHead : pos+recHead+n] // the window's is a copy
		if p[0] == recMark {
			at := int64(binary.BigEndian.Uint64(p[1:]))
			binary.BigEndian.PutUint64(p[1:], uint64(max(at-gone, spillHeader)))
		}
		binary.BigEndian.PutUint32(b[pos+4:], recSum(spillVersion, off+pos-gone, p))
		pos += recHead + n
	}
	return nil
}

// bytesAt reads b as the bytes of a file from offset base on.
type bytesAt struct {
	b    []byte
	base int64
}

func (r bytesAt) ReadAt(p []byte, off int64) (int, error) {
	if off < r.base || off-r.base >= int64(len(r.b)) {
		return 0, io.EOF
	}
	n := copy(p, r.b[off-r.base:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// compactFinish copies what was appended since c.copyTo last copied,
// fsyncs, renames the new file over the old one and makes it the file;
// it returns how far every offset moved down (0: not rewritten, the old
// file stays). The caller holds the peer's lock.
func (s *spill) compactFinish(c *spillCompaction) (int64, error) {
	s.compacting = nil
	gone := c.off - spillHeader
	if c.err == nil && s.syncErr != nil {
		c.err = s.syncErr // the old file's pages may be lost: not copied as sound
	}
	if c.err == nil && c.cut {
		// Renamed over the file, it brought back what the cut took,
		// under records written since, and the offsets moved below
		// zero: every write failed for the rest of the run.
		c.err = errors.New("the file shrank under the rewrite (cut by something else); the file stays as it is")
	}
	if c.err == nil {
		if err := s.flush(); err != nil {
			c.err = err
		}
	}
	c.copyTo(s.flushed)
	err := c.err
	if err == nil {
		err = c.tmp.Sync()
	}
	if err == nil {
		err = os.Rename(c.path+".tmp", c.path)
	}
	if err != nil {
		c.tmp.Close()
		os.Remove(c.path + ".tmp")
		if s.compactAt < math.MaxInt64/2 {
			s.compactAt *= 2 // a full disk, say: try again when there is more to gain
		}
		if errors.Is(err, s.syncErr) {
			return 0, err
		}
		return 0, fmt.Errorf("spill file %s: rewriting without its %d acknowledged bytes: %w", s.path, gone, err)
	}
	// The rename is done: from here the file is the new one.
	s.f.Close()
	s.f = c.tmp
	s.skipWin = nil
	s.version = spillVersion
	s.end -= gone
	s.flushed -= gone
	s.readOff -= gone
	s.consumed = spillHeader
	kept := s.bad[:0]
	for _, r := range s.bad {
		if r.end > c.off { // those before were skipped already
			kept = append(kept, spillRegion{start: r.start - gone, end: r.end - gone, why: r.why, torn: r.torn})
		}
	}
	s.bad = kept
	if s.unlistedTo > c.off {
		s.unlistedFrom, s.unlistedTo = max(s.unlistedFrom, c.off)-gone, s.unlistedTo-gone
	} else {
		s.unlistedFrom, s.unlistedTo = 0, 0
	}
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

// shift moves the offsets memory holds down by d, after a compaction.
func (m *spillMem) shift(d int64) {
	m.from = max(m.from-d, spillHeader)
	for i := m.head; i < len(m.items); i++ {
		m.items[i].recEnd -= d
	}
}
