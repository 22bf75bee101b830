package communicator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Damage a spill file's open finds: the stretches in the middle the
// reader jumps over, and a damaged tail kept aside for the operator; and
// a file cut short under the reader.

// spillBadKept bounds the damaged stretches a spill file lists for the
// reader to jump over: each took about 90 bytes for the whole run, 13 MB
// for a file damaged in 150,000 places.
const spillBadKept = 1024

// keepBad lists r, a damaged stretch the open found after the last mark,
// for the reader to jump over, without what is wrong with it (reported
// already): one of the first spillBadKept; after those, the reader finds
// the stretches again as it comes to them (a search linear in their
// bytes, as the open's).
func (s *spill) keepBad(r spillRegion) {
	if len(s.bad) < spillBadKept && s.unlistedFrom == 0 {
		s.bad = append(s.bad, spillRegion{start: r.start, end: r.end})
		return
	}
	s.keepUnlisted(r.start, r.end)
}

// keepUnlisted has the reader find the damaged stretches from from to to
// again, after those listed, and skip them uncounted: the open counted
// them.
func (s *spill) keepUnlisted(from, to int64) {
	if s.unlistedFrom == 0 {
		s.unlistedFrom = from
	}
	s.unlistedTo = to
}

// cutTail copies the bytes from off to keep to a new <path>.bad-<off>
// (its name returned; "": nothing to keep), fsyncs it and its directory
// and truncates the file at off. The copy streams: a damaged tail may be
// most of a large file. The zeros from keep on are not copied: a file
// extended with a sparse terabyte of them made a terabyte written. The
// directory's fsync comes before the cut: the copy's own fsync does not
// make its name durable, and a power cut could keep the cut and lose the
// copy.
func (s *spill) cutTail(off, keep int64) (string, error) {
	if keep <= off {
		return "", s.f.Truncate(off)
	}
	bad := badName(s.path, off)
	f, err := os.OpenFile(bad, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, io.NewSectionReader(s.f, off, keep-off))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(bad) // a part of the tail would pass for all of it
		return "", fmt.Errorf("copying to %s: %w", bad, err)
	}
	dirSync := s.tailDirSync
	if dirSync == nil {
		dirSync = syncDir
	}
	if err := dirSync(filepath.Dir(s.path)); err != nil {
		// The tail stays in the file, skipped: the next start keeps it
		// aside again, under this name if it is free.
		os.Remove(bad)
		return "", fmt.Errorf("fsync of the directory of %s: %w", bad, err)
	}
	return bad, s.f.Truncate(off)
}

// badName is <path>.bad-<off>, or with .1, .2, ... appended if that is
// taken: what an earlier start kept aside for the operator stays.
func badName(path string, off int64) string {
	base := fmt.Sprintf("%s.bad-%d", path, off)
	name := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(name); err != nil {
			return name // free, or the write that follows says why not
		}
		name = fmt.Sprintf("%s.%d", base, i)
	}
}

// shrank takes the file's size now that a read found it shorter than
// what was written to it (cut by something else since the last write: a
// truncate, a tool). What lay past the cut is lost but for this run's
// items memory holds (write-through): those are written again from the
// new end. flush writes at flushed, so records written from there would
// leave the cut's bytes a hole of zeros before them, damage every read
// skips; so the offsets are taken from the file as it is, and the cut is
// reported with what it took. (A cut no read saw before the next write is
// that hole: skipped as damage, the records after it delivered.) A cut
// into the header has the header written again: else the next start
// would move the whole file aside.
// It returns the size (-1 with the error when the file cannot be
// looked at), and the error saying what the cut took, if it shrank.
func (s *spill) shrank() (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return -1, fmt.Errorf("spill file %s: %w", s.path, err)
	}
	size := fi.Size()
	if size >= s.flushed {
		return s.flushed, nil
	}
	was, lostFrom := s.flushed, max(size, s.readOff)
	if s.compacting != nil {
		s.compacting.cut = true // its copy is of the file before the cut
	}
	var errs []error
	if size < spillHeader {
		if _, err := s.f.WriteAt(spillHeaderBytes(s.self, s.peer), 0); err != nil {
			errs = append(errs, fmt.Errorf("spill file %s: writing its header again: %w", s.path, err))
		}
		size, s.version = spillHeader, spillVersion // no record of the old version is left
	}
	// Memory's items past the cut: their offsets are the old ones, and
	// their records gone, but they are whole here. Those before the cut
	// are read from the file.
	type kept struct {
		tag uint64
		url []byte
	}
	var again []kept
	if m := &s.mem; m.on {
		for _, it := range m.items[m.head:] {
			if it.recEnd > size {
				again = append(again, kept{it.tag, bytes.Clone(m.slab[it.off : it.off+it.n])})
			}
		}
	}
	// Nothing is at or after size: memory holds all there is from
	// there, and takes the items written again (they were in memory, so
	// they fit) and those spilled next. The reader's count then comes
	// right at size (skipTo), with nothing between it and memory.
	s.mem.start(size)
	s.skipWin = nil
	// s.buf is empty (readChunk flushed it), so no record is counted at
	// offsets past the new end.
	s.flushed, s.end = size, size+int64(len(s.buf))
	s.readOff = min(s.readOff, size)
	s.consumed = min(s.consumed, size)
	for i, r := range s.bad {
		if r.start >= size {
			s.bad = s.bad[:i]
			break
		}
		s.bad[i].end = min(r.end, size)
	}
	s.unlistedFrom, s.unlistedTo = min(s.unlistedFrom, size), min(s.unlistedTo, size)
	for _, k := range again {
		// Counted unread and spilled already.
		s.unreadItems--
		if isControl(s.controlTag, k.tag) {
			s.unreadControl--
		}
		s.spilledItems--
		if err := s.append(k.tag, k.url); err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	}
	// Written now: the reader goes on with an empty buffer (readChunk),
	// and another cut found before its end must not take records
	// counted from this one's.
	if err := s.flush(); err != nil && len(errs) == 0 {
		errs = append(errs, err)
	}
	msg := fmt.Sprintf("spill file %s shrank under the endpoint from %d to %d bytes (cut by something else): the records written at offset %d and after are lost", s.path, was, fi.Size(), lostFrom)
	if len(again) > 0 {
		msg += fmt.Sprintf(", but the %d items this run spilled from there on, whole in memory, are written again", len(again))
	}
	msg += fmt.Sprintf("; items spilled from now on are written from offset %d", size)
	if fi.Size() < spillHeader {
		msg += ", after the header, written again"
	}
	cut := errors.Join(append([]error{errors.New(msg)}, errs...)...)
	s.note(cut.Error())
	return size, cut
}
