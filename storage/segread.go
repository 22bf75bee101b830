package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
	Reason   error
}

func (c *Corruption) Error() string {
	lost := ""
	if c.Lost > 0 {
		lost = fmt.Sprintf(", %d pages lost", c.Lost)
	}
	if c.TornTail {
		lost += "; a torn tail after the index checkpoint, as an interrupted write leaves"
	}
	return fmt.Sprintf("storage: %s at offset %d: %v (skipped %d bytes%s)", c.File, c.Offset, c.Reason, c.Skipped, lost)
}

func (c *Corruption) Unwrap() error { return c.Reason }

// segmentReader reads the records of one segment file in order, through a
// window so that a scan is a few large sequential reads.
type segmentReader struct {
	f    *os.File
	path string
	num  uint32
	size int64
	off  int64 // offset of the next record

	win    []byte // file bytes from winOff on
	winOff int64
}

const readWindow = 1 << 20

// newSegmentReader checks the header of segment num, open as f, of size
// bytes. The file stays owned by the caller. A damaged header is returned
// as hdr, with a reader that still reads the records behind it (each has
// its own checksum); a torn header (size < segmentHeaderSize) and an
// unsupported version are errors.
func newSegmentReader(f *os.File, path string, num uint32, size int64) (r *segmentReader, hdr *Corruption, err error) {
	r = &segmentReader{f: f, path: path, num: num, size: size, off: segmentHeaderSize}
	if size < segmentHeaderSize {
		return nil, nil, &Corruption{File: path, Offset: 0, Skipped: size,
			Reason: fmt.Errorf("%w: segment header torn (%d bytes)", ErrCorrupt, size)}
	}
	b, err := r.window(0, segmentHeaderSize)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSegmentHeader(b, num); err != nil {
		if errors.Is(err, ErrVersion) {
			return nil, nil, fmt.Errorf("storage: %s: %w", path, err)
		}
		hdr = &Corruption{File: path, Offset: 0, Skipped: segmentHeaderSize, Reason: err}
	}
	return r, hdr, nil
}

// window returns the file's bytes [off, off+n), n ≤ size-off, reading them
// unless they are already in the window.
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
	if _, err := r.f.ReadAt(r.win, off); err != nil {
		r.win = r.win[:0]
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("storage: reading %s at offset %d: %w", r.path, off, err)
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
	if !errors.Is(err, ErrCorrupt) {
		return off, h, nil, err
	}
	resume, rerr := r.resync(off + 1)
	if rerr != nil {
		return off, h, nil, rerr
	}
	r.off = resume
	return off, h, nil, &Corruption{File: r.path, Offset: off, Skipped: resume - off, Reason: err}
}

// resync finds the first valid record at or after from, or the end of the
// file.
func (r *segmentReader) resync(from int64) (int64, error) {
	magic := []byte(recordMagic)
	for pos := from; r.size-pos >= recordHeaderSize; {
		n := int(min(int64(readWindow), r.size-pos))
		b, err := r.window(pos, n)
		if err != nil {
			return 0, err
		}
		i := bytes.Index(b, magic)
		if i < 0 {
			pos += int64(n - len(magic) + 1)
			continue
		}
		cand := pos + int64(i)
		_, _, err = r.recordAt(cand)
		if err == nil {
			return cand, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return 0, err
		}
		pos = cand + 1
	}
	return r.size, nil
}
