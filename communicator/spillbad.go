package communicator

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Damage a spill file's open finds: the stretches in the middle the
// reader jumps over, and a damaged tail kept aside for the operator.

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
