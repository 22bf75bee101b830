package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// openSaver takes a data directory for writing: it locks it, repairs what a
// crash may have left (a torn record at the end of the last segment, index
// entries missing after the checkpoint) and opens the last segment for
// appending.
func openSaver(s *Store, dir string) (_ *saver, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	sv := &saver{s: s, dir: dir, wake: make(chan struct{}, 1)}
	defer func() {
		if err != nil {
			sv.closeFiles()
		}
	}()
	lockPath := filepath.Join(dir, "LOCK")
	if sv.lock, err = openLock(lockPath); err != nil {
		return nil, err
	}
	if err := unix.Flock(int(sv.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil, fmt.Errorf("storage: data directory %s is in use by another store (%s: %w)", dir, lockPath, err)
	}
	ixPath := filepath.Join(dir, indexName)
	// The directories' STORE files were read before the lock was taken;
	// a directory without one (new, or of a store from before
	// identities) is given the store's now, before anything is written.
	switch id, err := readStoreFile(dir); {
	case err != nil:
		return nil, fmt.Errorf("%w (kspider check --repair sets it aside)", err)
	case id == (storeID{}):
		if err := writeStoreFile(dir, s.id); err != nil {
			return nil, err
		}
	case id != s.id:
		return nil, fmt.Errorf("storage: %s: %w data directory: it names store %v, the other directories %v", filepath.Join(dir, storeFileName), ErrForeign, id, s.id)
	}
	if sv.ix, err = openIndex(ixPath, true); err != nil {
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, errOldIndex) {
			return nil, err
		}
		if !errors.Is(err, os.ErrNotExist) {
			s.cfg.Logf("%v; rebuilding it from the segments", err)
		}
		if err := createIndex(ixPath); err != nil {
			return nil, err
		}
		if sv.ix, err = openIndex(ixPath, true); err != nil {
			return nil, err
		}
	} else if sv.ix.torn != nil {
		s.cfg.Logf("%v", sv.ix.torn)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	if err := checkStrayGap(dir, segs); err != nil {
		return nil, err
	}
	end, lastOK, err := sv.reindex(segs)
	if err != nil {
		return nil, err
	}
	var lastSeg uint32
	if len(segs) > 0 {
		lastSeg = segs[len(segs)-1]
	}
	// Segments the checkpoint names are gone (deleted, or a directory
	// restored from an older copy): the index still points into them, so
	// their numbers must not be used again, or its entries would name
	// other pages' records.
	ckSeg, _ := sv.ix.checkpoint()
	if err := checkStraysAhead(dir, max(lastSeg, ckSeg)); err != nil {
		return nil, err
	}
	gone := ckSeg > lastSeg
	if gone {
		s.cfg.Logf("storage: %s: segment %s, which the index checkpoint names, %s: its pages are lost (kspider check counts them); new records go to %s",
			dir, segmentPath(dir, ckSeg), segmentAbsent(dir, ckSeg), segmentName(ckSeg+1))
	}
	if len(segs) > 0 && lastOK && end < s.cfg.SegmentSize && !gone {
		n := segs[len(segs)-1]
		path := segmentPath(dir, n)
		if sv.seg, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
		if _, err := sv.seg.Seek(end, io.SeekStart); err != nil {
			return nil, fmt.Errorf("storage: %s: %w", path, err)
		}
		sv.segNum, sv.segOff, sv.synced = n, end, end
	} else {
		if err := sv.createSegment(max(lastSeg, ckSeg) + 1); err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
	}
	if err := sv.ix.setCheckpoint(sv.segNum, sv.segOff); err != nil {
		return nil, err
	}
	return sv, nil
}

// checkStraysAhead returns an error naming what stands under the name of
// a segment after last, the highest number the writer knows, which is not
// a segment file (listSegments takes none but those): a directory, a
// FIFO, a link. The writer numbers its next segments from last on, and
// would stop at that name, hours into a crawl, the directory taking no
// more pages; a Reader reports it as damage (noteStrays).
func checkStraysAhead(dir string, last uint32) error {
	_, odd, err := listSegmentNames(dir)
	if err != nil {
		return err
	}
	var ahead []uint32
	for _, n := range odd {
		if n > last {
			ahead = append(ahead, n)
		}
	}
	if len(ahead) == 0 {
		return nil
	}
	path := segmentPath(dir, ahead[0])
	what := "something"
	if fi, err := os.Lstat(path); err == nil {
		what = fileKind(fi.Mode())
	}
	more := ""
	if len(ahead) > 1 {
		more = fmt.Sprintf(" (and %d more names after it)", len(ahead)-1)
	}
	after := "after the last segment, " + segmentName(last)
	if last == 0 {
		after = "and there are no segments"
	}
	return fmt.Errorf("storage: %s: %s stands under the name %s%s, %s: it is not a segment file, and the writer, numbering its next segments on, would stop on reaching it; if it is not this store's, move it out of the directory",
		dir, what, path, more, after)
}

// reindexProgressEvery is how often a whole store's re-indexing says how
// far it got.
const reindexProgressEvery = 10 * time.Second

// reindex reads the segments from the index checkpoint on and points the
// index at every record there; later records override earlier ones. A torn
// record at the end of the last segment is truncated away. It returns the
// end of the valid data in the last segment and whether that segment can
// be appended to.
func (sv *saver) reindex(segs []uint32) (end int64, lastOK bool, err error) {
	ckSeg, ckOff := sv.ix.checkpoint()
	logf := sv.s.cfg.Logf
	// A new index (an older format's or a damaged one replaced) reads
	// every segment, minutes for a large store: say so, and how far it
	// got now and then, so that the start does not look hung.
	whole := ckSeg == 0 && len(segs) > 1
	if whole {
		logf("storage: %s: indexing all %d segments", sv.dir, len(segs))
	}
	said := time.Now()
	for i, n := range segs {
		if n < ckSeg {
			continue
		}
		last := i == len(segs)-1
		start := int64(0) // the first record
		if n == ckSeg {
			start = ckOff
		}
		end, lastOK, err = sv.reindexSegment(n, start, last)
		if err != nil {
			return 0, false, err
		}
		if !last && !lastOK {
			logf("storage: %s: unreadable segment left as it is", segmentPath(sv.dir, n))
		}
		if whole && time.Since(said) >= reindexProgressEvery {
			logf("storage: %s: indexed %d of %d segments", sv.dir, i+1, len(segs))
			said = time.Now()
		}
	}
	if err := sv.ix.sync(); err != nil {
		return 0, false, err
	}
	return end, lastOK, nil
}

func (sv *saver) reindexSegment(n uint32, start int64, last bool) (end int64, ok bool, err error) {
	path := segmentPath(sv.dir, n)
	logf := sv.s.cfg.Logf
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, false, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("storage: %w", err)
	}
	size := fi.Size()
	if last && size < segmentHeaderSize && !intactV2Header(f, n, size) {
		// Torn while being created: start it again.
		logf("storage: %s: segment header torn (%d bytes); rewriting it", path, size)
		if err := f.Truncate(0); err != nil {
			return 0, false, fmt.Errorf("storage: %w", err)
		}
		if _, err := f.WriteAt(encodeSegmentHeader(n, sv.s.id), 0); err != nil {
			return 0, false, fmt.Errorf("storage: %w", err)
		}
		if err := f.Sync(); err != nil {
			return 0, false, fmt.Errorf("storage: %w", err)
		}
		return segmentHeaderSize, true, nil
	}
	r, hdr, err := newSegmentReader(f, path, n, size, false, sv.s.id)
	if err != nil {
		var c *Corruption
		if errors.As(err, &c) {
			logf("%v", err)
			return size, false, nil
		}
		return 0, false, err
	}
	if hdr != nil {
		// Its records carry their own checksums and are indexed; the
		// segment itself is not appended to (kspider check --repair
		// rewrites it).
		logf("%v", hdr)
		ok = false
	} else {
		ok = true
	}
	if start > size {
		// Cut short after its records were durable: the index still
		// points past its end, so nothing may be appended at offsets
		// those entries name.
		logf("storage: %s is shorter (%d bytes) than the index checkpoint (%d): pages lost (kspider check counts them); re-reading it whole, new records go to a new segment", path, size, start)
		start = 0
		ok = false
	}
	r.off = max(start, r.first)
	if ckSeg, _ := sv.ix.checkpoint(); ckSeg != 0 {
		// Every record reported durable is in the index, after the
		// checkpoint too; an index made anew (no checkpoint) answers
		// for nothing.
		r.vouch = indexVouch(sv.ix, n, nil)
	}
	for {
		off, h, _, err := r.next()
		if err == io.EOF {
			return size, ok, nil
		}
		var c *Corruption
		if errors.As(err, &c) {
			// Only a segment the writer appends to, its header intact,
			// can end in a write cut short; behind a damaged header
			// (another file under a segment's name?) nothing is cut.
			if last && ok && c.Offset+c.Skipped == size {
				// A write cut short leaves records never synced, which
				// the index does not have. One it has was durable: that
				// is damage, kept for kspider check, and the next
				// record must not take its place (its entry would then
				// point at another page).
				id, at, durable, err := sv.indexedRecordIn(r, c.Offset)
				if err != nil {
					return 0, false, err
				}
				if durable {
					logf("%v; not a write cut short: the index has the record of URL id %d at offset %d in it; left for kspider check --repair, new records go to a new segment", c, id, at)
					return size, false, nil
				}
				logf("%v; truncating the torn tail", c)
				if err := f.Truncate(c.Offset); err != nil {
					return 0, false, fmt.Errorf("storage: truncating %s: %w", path, err)
				}
				if err := f.Sync(); err != nil {
					return 0, false, fmt.Errorf("storage: %w", err)
				}
				return c.Offset, ok, nil
			}
			logf("%v", c)
			continue
		}
		if err != nil {
			return 0, false, err
		}
		if err := sv.ix.set(h.urlID, n, off); err != nil {
			return 0, false, fmt.Errorf("storage: %s at offset %d: %w", path, off, err)
		}
	}
}

// intactV2Header reports whether the size bytes of segment n, open as f,
// are an intact header of version 1 or 2, an empty segment of an older
// kspider, not a torn one.
func intactV2Header(f *os.File, n uint32, size int64) bool {
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return false
	}
	h, err := checkSegmentHeader(b, n)
	return err == nil && h.version < segmentVersion
}

// indexedRecordIn looks for a record header in r from offset from on that
// the index points at: a record reported durable. It returns its URL id
// and offset if there is one.
func (sv *saver) indexedRecordIn(r *segmentReader, from int64) (id uint64, at int64, found bool, err error) {
	// The region's first record may be a durable one whose header is
	// damaged or cut short, which the search below passes over: its URL
	// id field, where it would be, is asked about too.
	if r.size-from >= 24 {
		b, err := r.window(from+16, 8)
		if err != nil {
			return 0, 0, false, err
		}
		id := binary.LittleEndian.Uint64(b)
		if seg, off, st := sv.ix.lookup(id); st == entrySet && seg == r.num && off == from {
			return id, from, true, nil
		}
	}
	magic := []byte(recordMagic)
	for pos := from; r.size-pos >= recordHeaderSize; {
		n := int(min(int64(readWindow), r.size-pos))
		b, err := r.window(pos, n)
		if err != nil {
			return 0, 0, false, err
		}
		i := bytes.Index(b, magic)
		if i < 0 {
			pos += int64(n - len(magic) + 1)
			continue
		}
		cand := pos + int64(i)
		pos = cand + 1
		if r.size-cand < recordHeaderSize {
			break
		}
		hb, err := r.window(cand, recordHeaderSize)
		if err != nil {
			return 0, 0, false, err
		}
		h, err := parseRecordHeader(hb)
		if err != nil {
			continue
		}
		if seg, off, st := sv.ix.lookup(h.urlID); st == entrySet && seg == r.num && off == cand {
			return h.urlID, cand, true, nil
		}
	}
	return 0, 0, false, nil
}
