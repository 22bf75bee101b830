package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Corruption describes a damaged region of a segment that a reader skipped:
// from Offset, Skipped bytes up to the next valid record (or the end of the
// file). It wraps ErrCorrupt.
type Corruption struct {
	File    string
	Offset  int64
	Skipped int64
	// Lost is how many pages the index knew in the region (set after a
	// Scan; 0 when unknown, such as when the index itself was damaged).
	Lost int64
	// TornTail marks a region that ends the last segment after the index
	// checkpoint: what an interrupted write leaves (the next writer
	// truncates it), though a truncation looks the same.
	TornTail bool
	// Unreadable marks a region whose bytes could not be read at all (an
	// I/O error, such as a bad sector): the disk, not the data written,
	// may be at fault. It is never a torn tail.
	Unreadable bool
	Reason     error
}

func (c *Corruption) Error() string {
	lost := ""
	if c.Lost > 0 {
		lost = fmt.Sprintf(", %d pages lost", c.Lost)
	}
	if c.TornTail {
		lost += "; a torn tail after the index checkpoint, as an interrupted write leaves"
	}
	if c.Unreadable {
		lost += "; unreadable: the disk may be failing"
	}
	return fmt.Sprintf("storage: %s at offset %d: %v (skipped %d bytes%s)", c.File, c.Offset, c.Reason, c.Skipped, lost)
}

func (c *Corruption) Unwrap() error { return c.Reason }

// segmentReader reads the records of one segment file in order, through a
// window so that a scan is a few large sequential reads.
type segmentReader struct {
	f     io.ReaderAt
	path  string
	num   uint32
	size  int64
	off   int64 // offset of the next record
	first int64 // where the records begin: the header's size
	// vouch, if set, tells whether a record found by the search after
	// damage, of URL id id at off, may be one of this store's: the index
	// answers (indexVouch).
	vouch func(id uint64, off int64) bool
	// skipUnreadable makes a read error (EIO: a bad sector) a damaged
	// region like any other, skipped and reported, instead of an error
	// that ends the reading: a reader's scan and a repair go on behind
	// it. A writer's recovery leaves it off: it must not take an
	// unreadable tail for a torn one and cut it away.
	skipUnreadable bool

	win    []byte // file bytes from winOff on
	winOff int64
}

const readWindow = 1 << 20

// newSegmentReader checks the header of segment num, open as f, of size
// bytes. The file stays owned by the caller. A damaged header is returned
// as hdr, with a reader that still reads the records behind it (each has
// its own checksum); a torn header (size < segmentHeaderV2Size) and an
// unsupported version are errors. A segment whose header names another
// store than store (unless either is zero: a store or a segment from
// before identities) is a *Corruption over the whole file wrapping
// ErrForeign: none of its records is this store's. skipUnreadable: see
// segmentReader.
func newSegmentReader(f io.ReaderAt, path string, num uint32, size int64, skipUnreadable bool, store storeID) (r *segmentReader, hdr *Corruption, err error) {
	r = &segmentReader{f: f, path: path, num: num, size: size, off: segmentHeaderV2Size, first: segmentHeaderV2Size, skipUnreadable: skipUnreadable}
	if size < segmentHeaderV2Size {
		return nil, nil, &Corruption{File: path, Offset: 0, Skipped: size,
			Reason: fmt.Errorf("%w: segment header torn (%d bytes)", ErrCorrupt, size)}
	}
	b, err := r.window(0, int(min(size, segmentHeaderSize)))
	var re *readError
	switch {
	case errors.As(err, &re) && skipUnreadable:
		return r, &Corruption{File: path, Offset: 0, Skipped: segmentHeaderV2Size, Unreadable: true, Reason: re.reason()}, nil
	case errors.Is(err, ErrCorrupt):
		return nil, nil, &Corruption{File: path, Offset: 0, Skipped: size, Reason: err} // cut inside its header since it was measured
	case err != nil:
		return nil, nil, err
	}
	h, err := checkSegmentHeader(b, num)
	r.off, r.first = h.size, h.size
	switch {
	case size < h.size:
		return nil, nil, &Corruption{File: path, Offset: 0, Skipped: size,
			Reason: fmt.Errorf("%w: segment header torn (%d bytes of %d)", ErrCorrupt, size, h.size)}
	case errors.Is(err, ErrVersion):
		return nil, nil, fmt.Errorf("storage: %s: %w", path, err)
	case err != nil:
		hdr = &Corruption{File: path, Offset: 0, Skipped: min(h.size, size), Reason: err}
	case h.store != (storeID{}) && store != (storeID{}) && h.store != store:
		return nil, nil, &Corruption{File: path, Offset: 0, Skipped: size, Reason: foreignSegment(h.store, store)}
	}
	return r, hdr, nil
}

// readError is a read of a segment that failed (EIO, say), not data that
// fails its checks.
type readError struct {
	path string
	off  int64
	err  error
}

func (e *readError) Error() string {
	return fmt.Sprintf("storage: reading %s at offset %d: %v", e.path, e.off, e.err)
}

func (e *readError) Unwrap() error { return e.err }

// reason is the Reason of the Corruption reporting the unreadable region.
func (e *readError) reason() error { return fmt.Errorf("%w: unreadable (%w)", ErrCorrupt, e.err) }

// window returns the file's bytes [off, off+n), n ≤ size-off, reading them
// unless they are already in the window. A read error is a *readError
// about those very bytes: a read ahead that fails is tried again without
// reading ahead, so a bad sector behind them does not make them unreadable.
func (r *segmentReader) window(off int64, n int) ([]byte, error) {
	if off < 0 || off+int64(n) > r.size {
		return nil, fmt.Errorf("storage: %s: read of %d bytes at offset %d beyond the end (%d)", r.path, n, off, r.size)
	}
	if off >= r.winOff && off+int64(n) <= r.winOff+int64(len(r.win)) {
		s := off - r.winOff
		return r.win[s : s+int64(n)], nil
	}
	want := max(n, readWindow)
	if rest := r.size - off; int64(want) > rest {
		want = int(rest)
	}
	if cap(r.win) < want {
		r.win = make([]byte, want)
	}
	r.win = r.win[:want]
	got, err := r.f.ReadAt(r.win, off)
	if err != nil && !errors.Is(err, io.EOF) && want > n {
		r.win = r.win[:n]
		got, err = r.f.ReadAt(r.win, off)
	}
	if errors.Is(err, io.EOF) {
		// The file is shorter than when it was opened: cut while being
		// read (a writer's recovery truncating a torn tail, or by hand).
		// What is left is read; the rest is a damaged region.
		was := r.size
		r.size = off + int64(got)
		r.win = r.win[:got]
		r.winOff = off
		if got >= n {
			return r.win[:n], nil
		}
		return nil, fmt.Errorf("storage: %s: %w: the file ends at offset %d, %d bytes shorter than when it was opened (truncated while being read?)", r.path, ErrCorrupt, r.size, was-r.size)
	}
	if err != nil {
		r.win = r.win[:0]
		return nil, &readError{path: r.path, off: off, err: err}
	}
	r.winOff = off
	return r.win[:n], nil
}

// recordAt checks the record at off: its header, its bounds and its CRC.
// rec is valid until the next read.
func (r *segmentReader) recordAt(off int64) (h recordHeader, rec []byte, err error) {
	if r.size-off < recordHeaderSize {
		return h, nil, fmt.Errorf("%w: %d bytes left, too few for a record header", ErrCorrupt, r.size-off)
	}
	b, err := r.window(off, recordHeaderSize)
	if err != nil {
		return h, nil, err
	}
	if h, err = parseRecordHeader(b); err != nil {
		return h, nil, err
	}
	if int64(h.length) > r.size-off {
		return h, nil, fmt.Errorf("%w: record of %d bytes, only %d left in the file", ErrCorrupt, h.length, r.size-off)
	}
	if rec, err = r.window(off, int(h.length)); err != nil {
		return h, nil, err
	}
	return h, rec, checkRecord(h, rec)
}

// next returns the next valid record and its offset, io.EOF at the end of
// the segment, or a *Corruption for a damaged region, after which next
// carries on with the first valid record behind it.
func (r *segmentReader) next() (off int64, h recordHeader, rec []byte, err error) {
	if r.off >= r.size {
		return r.size, h, nil, io.EOF
	}
	off = r.off
	h, rec, err = r.recordAt(off)
	if err == nil {
		r.off = off + int64(h.length)
		return off, h, rec, nil
	}
	var re *readError
	unreadable := errors.As(err, &re) && r.skipUnreadable
	if unreadable {
		err = re.reason()
	} else if !errors.Is(err, ErrCorrupt) {
		return off, h, nil, err
	}
	if end, ok := r.behind(off, rec); ok {
		r.off = end
		return off, h, nil, &Corruption{File: r.path, Offset: off, Skipped: end - off, Reason: err}
	}
	resume, sawUnreadable, rerr := r.resync(off + 1)
	if rerr != nil {
		return off, h, nil, rerr
	}
	r.off = resume
	return off, h, nil, &Corruption{File: r.path, Offset: off, Skipped: resume - off, Unreadable: unreadable || sawUnreadable, Reason: err}
}

// behind returns where the record at off ends, when only its checksum
// failed (rec, its bytes, were read: the header is consistent) and a
// valid record, or the end of the file, follows it there. The search for
// the next record then starts behind it, not in its body: a body may hold
// records itself (a page that is a segment of a kspider store), which
// pass every check but are no records of this store.
func (r *segmentReader) behind(off int64, rec []byte) (end int64, ok bool) {
	if rec == nil {
		return 0, false
	}
	end = off + int64(len(rec))
	if end == r.size {
		return end, true
	}
	_, _, err := r.recordAt(end)
	return end, err == nil
}

// resync finds the first valid record at or after from, or the end of the
// file. With skipUnreadable it searches the readable bytes only, and says
// whether it met unreadable ones.
func (r *segmentReader) resync(from int64) (resume int64, sawUnreadable bool, err error) {
	magic := []byte(recordMagic)
	var re *readError
	var spent int64 // bytes of candidates read and checksummed, then rejected
	for pos := from; r.size-pos >= recordHeaderSize; {
		n := int(min(int64(readWindow), r.size-pos))
		b, err := r.window(pos, n)
		if errors.As(err, &re) && r.skipUnreadable {
			sawUnreadable = true
			if n = r.readablePrefix(pos, n); n == 0 {
				pos = r.nextReadable(pos)
				continue
			}
			b, err = r.window(pos, n)
		}
		if errors.Is(err, ErrCorrupt) {
			continue // cut while being read: r.size is where it ends now
		}
		if err != nil {
			return 0, sawUnreadable, err
		}
		i := bytes.Index(b, magic)
		if i < 0 {
			pos += int64(max(1, n-len(magic)+1))
			continue
		}
		cand := pos + int64(i)
		claim, claimed := r.claimedLength(cand)
		if claimed && claim > maxRecordSize+searchBytesPerByte*(cand-from)-spent {
			pos = cand + 1 // beyond the allowance: part of the damaged region
			continue
		}
		h, _, err := r.recordAt(cand)
		if err == nil && (r.vouch == nil || r.vouch(h.urlID, cand)) {
			return cand, sawUnreadable, nil
		}
		if claimed {
			spent += claim
		}
		if err == nil {
			pos = cand + 1 // a record in a page's body, not one of this store's
			continue
		}
		if errors.As(err, &re) && r.skipUnreadable {
			sawUnreadable = true
		} else if !errors.Is(err, ErrCorrupt) {
			return 0, sawUnreadable, err
		}
		pos = cand + 1
	}
	return r.size, sawUnreadable, nil
}

// searchBytesPerByte bounds the work of the search for the next record
// after damage (resync): the bytes of candidates it reads and checksums,
// then rejects (a checksum failing, a record in a page's body), may not
// pass one record's largest size and this many for each byte searched.
// Else a region of candidates each claiming a large record (a hostile
// page stored uncompressed, its header damaged or torn) makes it
// quadratic: hundreds of GB checksummed for a 10 MB page. A candidate
// beyond the allowance is passed over like a rejected one, its bytes part
// of the damaged region reported; at most the first record behind such a
// region is, and the allowance has grown back by its end.
const searchBytesPerByte = 16

// claimedLength returns the length the record header at off claims, if
// one that parses is there and the file holds that many bytes: what
// recordAt reads and checksums.
func (r *segmentReader) claimedLength(off int64) (int64, bool) {
	if r.size-off < recordHeaderSize {
		return 0, false
	}
	b, err := r.window(off, recordHeaderSize)
	if err != nil {
		return 0, false
	}
	h, err := parseRecordHeader(b)
	if err != nil || int64(h.length) > r.size-off {
		return 0, false
	}
	return int64(h.length), true
}

// ioBlock is the unit in which unreadable bytes are looked for: a page of
// the page cache, which a bad sector makes fail whole.
const ioBlock = 4096

// readablePrefix returns how many of the n bytes from pos read without an
// error, reading them block by block (a larger read failed).
func (r *segmentReader) readablePrefix(pos int64, n int) int {
	buf := make([]byte, ioBlock)
	done := 0
	for done < n {
		at := pos + int64(done)
		k := min(ioBlock-int(at%ioBlock), n-done)
		if _, err := r.f.ReadAt(buf[:k], at); err != nil {
			break
		}
		done += k
	}
	return done
}

// nextReadable returns the first block boundary after pos from which the
// file reads again, or its end.
func (r *segmentReader) nextReadable(pos int64) int64 {
	buf := make([]byte, 1)
	for at := (pos/ioBlock + 1) * ioBlock; at < r.size; at += ioBlock {
		if _, err := r.f.ReadAt(buf, at); err == nil {
			return at
		}
	}
	return r.size
}
