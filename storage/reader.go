package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// ErrNotFound is returned by Get for a URL id with no stored record.
var ErrNotFound = errors.New("storage: no stored page for this URL id")

// Reader reads a store, also one a Store is writing to: Scan then sees the
// records as of OpenReader, and Get also those the writer has indexed
// since. Get may be called from many goroutines; Scan runs one goroutine
// per directory.
type Reader struct {
	dirs []*dirReader

	decoders sync.Pool // *decoder, for Get
	buffers  sync.Pool // *[]byte, for Get's reads

	records    atomic.Int64
	scanned    atomic.Int64 // segment bytes a Scan has passed (Progress)
	superseded atomic.Int64
	skipped    atomic.Int64
	skippedB   atomic.Int64
	errMu      sync.Mutex
	errs       []error
}

// dirReader is one data directory as the reader sees it.
type dirReader struct {
	dir   string
	mu    sync.Mutex // guards segs, which Get may extend
	segs  map[uint32]*segmentFile
	order []*segmentFile // the segments at OpenReader, ascending: what Scan reads
	ix    *index         // nil when url.idx is missing or damaged
	// extra indexes the records the index does not cover: those after its
	// checkpoint, or all of them when there is no usable index.
	extra map[uint64]location
}

type segmentFile struct {
	f    *os.File
	path string
	num  uint32
	size int64       // at OpenReader
	bad  atomic.Bool // the segment header is damaged: nothing in it is trusted
}

type location struct {
	seg uint32
	off int64
}

// maxReportedErrors bounds ScanStats.Errors.
const maxReportedErrors = 100

// ScanStats counts what a Reader met, from OpenReader on.
type ScanStats struct {
	Records      int64   // records passed to Scan's fn
	Superseded   int64   // older records of re-crawled URL ids, not passed
	Skipped      int64   // damaged regions skipped
	SkippedBytes int64   // bytes in them
	Errors       []error // the first damaged regions, as *Corruption (at most 100)
}

// OpenReader opens the data directories read-only. It indexes in memory the
// records a crashed writer left after the index checkpoint, and all records
// of a directory whose index is missing or damaged.
func OpenReader(dirs []string) (*Reader, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no data directory given")
	}
	r := &Reader{}
	r.decoders.New = func() any { return new(decoder) }
	r.buffers.New = func() any { return new([]byte) }
	for _, d := range dirs {
		dr, err := r.openDir(d)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.dirs = append(r.dirs, dr)
	}
	return r, nil
}

func (r *Reader) openDir(dir string) (*dirReader, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("storage: %s is not a directory", dir)
	}
	nums, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	dr := &dirReader{dir: dir, segs: map[uint32]*segmentFile{}, extra: map[uint64]location{}}
	for _, n := range nums {
		path := segmentPath(dir, n)
		f, err := os.Open(path)
		if err != nil {
			dr.close()
			return nil, fmt.Errorf("storage: %w", err)
		}
		sf := &segmentFile{f: f, path: path, num: n}
		dr.segs[n] = sf
		dr.order = append(dr.order, sf)
		st, err := f.Stat()
		if err != nil {
			dr.close()
			return nil, fmt.Errorf("storage: %w", err)
		}
		sf.size = st.Size()
		if sf.size < segmentHeaderSize && n == nums[len(nums)-1] {
			// A writer died creating it; its recovery will rewrite it.
			sf.bad.Store(true)
		}
	}
	ix, err := openIndex(filepath.Join(dir, indexName), false)
	switch {
	case err == nil:
		dr.ix = ix
	case errors.Is(err, os.ErrNotExist) && len(nums) == 0:
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrCorrupt):
		r.noteError(fmt.Errorf("%w; reading the segments instead", err))
	default:
		dr.close()
		return nil, err
	}
	ckSeg, ckOff := uint32(0), int64(0)
	if dr.ix != nil {
		ckSeg, ckOff = dr.ix.checkpoint()
	}
	for _, sf := range dr.order {
		if sf.num < ckSeg {
			continue
		}
		start := int64(segmentHeaderSize)
		if sf.num == ckSeg && ckOff <= sf.size {
			start = max(ckOff, segmentHeaderSize)
		}
		n := sf.num
		err := r.eachRecord(sf, start, false, func(off int64, h recordHeader, _ []byte) error {
			dr.extra[h.urlID] = location{n, off}
			return nil
		})
		if err != nil {
			dr.close()
			return nil, err
		}
	}
	return dr, nil
}

// eachRecord calls fn for every valid record of segment sf from offset start
// on, noting damaged regions if note is set (a Scan meets them again). rec
// is valid only during the call.
func (r *Reader) eachRecord(sf *segmentFile, start int64, note bool, fn func(off int64, h recordHeader, rec []byte) error) error {
	if sf.bad.Load() {
		return nil
	}
	sr, err := newSegmentReader(sf.f, sf.path, sf.num, sf.size)
	if err != nil {
		var c *Corruption
		if errors.As(err, &c) {
			sf.bad.Store(true)
			r.noteCorruption(c) // only once: bad segments are not read again
			return nil
		}
		return err
	}
	sr.off = min(start, sf.size)
	for {
		off, h, rec, err := sr.next()
		if err == io.EOF {
			return nil
		}
		var c *Corruption
		if errors.As(err, &c) {
			if note {
				r.noteCorruption(c)
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(off, h, rec); err != nil {
			return err
		}
	}
}

func (r *Reader) noteCorruption(c *Corruption) {
	r.skipped.Add(1)
	r.skippedB.Add(c.Skipped)
	r.noteError(c)
}

func (r *Reader) noteError(err error) {
	r.errMu.Lock()
	if len(r.errs) < maxReportedErrors {
		r.errs = append(r.errs, err)
	}
	r.errMu.Unlock()
}

// Stats returns what the reader has met so far.
func (r *Reader) Stats() ScanStats {
	r.errMu.Lock()
	errs := append([]error(nil), r.errs...)
	r.errMu.Unlock()
	return ScanStats{
		Records:      r.records.Load(),
		Superseded:   r.superseded.Load(),
		Skipped:      r.skipped.Load(),
		SkippedBytes: r.skippedB.Load(),
		Errors:       errs,
	}
}

// Skipped returns how many damaged regions the reader has skipped.
func (r *Reader) Skipped() int64 { return r.skipped.Load() }

// locate returns where dr holds the current record of id.
func (dr *dirReader) locate(id uint64) (location, bool) {
	if l, ok := dr.extra[id]; ok {
		return l, true
	}
	if dr.ix != nil {
		if seg, off, ok := dr.ix.lookup(id); ok {
			return location{seg, off}, true
		}
	}
	return location{}, false
}

// readRecord reads and checks the record at l: one read for records up to
// 16 KiB (most compressed pages), two contiguous ones for larger records. It goes by what the file holds now rather
// than its size at OpenReader, so Get also finds pages a live writer has
// indexed since.
func (dr *dirReader) readRecord(l location, buf []byte) (recordHeader, []byte, error) {
	var h recordHeader
	sf, err := dr.segment(l.seg)
	if err != nil {
		return h, nil, err
	}
	if l.off < segmentHeaderSize {
		return h, nil, fmt.Errorf("storage: %s: %w: index points at offset %d, inside the segment header", sf.path, ErrCorrupt, l.off)
	}
	const first = 16 << 10
	buf = grow(buf[:0], first)[:first]
	n, err := sf.f.ReadAt(buf, l.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, nil, fmt.Errorf("storage: reading %s at offset %d: %w", sf.path, l.off, err)
	}
	if n < recordHeaderSize {
		return h, nil, fmt.Errorf("storage: %s at offset %d: %w: %d bytes left in the file, too few for a record", sf.path, l.off, ErrCorrupt, n)
	}
	buf = buf[:n]
	if h, err = parseRecordHeader(buf); err != nil {
		return h, nil, fmt.Errorf("storage: %s at offset %d: %w", sf.path, l.off, err)
	}
	if int(h.length) > n {
		if n < first {
			return h, nil, fmt.Errorf("storage: %s at offset %d: %w: record of %d bytes runs past the end of the file", sf.path, l.off, ErrCorrupt, h.length)
		}
		buf = grow(buf, int(h.length)-n)[:h.length]
		if _, err := sf.f.ReadAt(buf[n:], l.off+int64(n)); err != nil {
			if errors.Is(err, io.EOF) {
				return h, nil, fmt.Errorf("storage: %s at offset %d: %w: record of %d bytes runs past the end of the file", sf.path, l.off, ErrCorrupt, h.length)
			}
			return h, nil, fmt.Errorf("storage: reading %s at offset %d: %w", sf.path, l.off+int64(n), err)
		}
	}
	if err := checkRecord(h, buf); err != nil {
		return h, nil, fmt.Errorf("storage: %s at offset %d: %w", sf.path, l.off, err)
	}
	return h, buf[:h.length], nil
}

// segment returns segment n, opening it if a live writer has started it
// since OpenReader.
func (dr *dirReader) segment(n uint32) (*segmentFile, error) {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if sf := dr.segs[n]; sf != nil {
		return sf, nil
	}
	path := segmentPath(dr.dir, n)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w: index points at segment %d, which cannot be opened: %v", dr.dir, ErrCorrupt, n, err)
	}
	b := make([]byte, segmentHeaderSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	if err := checkSegmentHeader(b, n); err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: %s: %w", path, err)
	}
	// Not added to order: a Scan stays a snapshot of OpenReader's moment.
	sf := &segmentFile{f: f, path: path, num: n}
	dr.segs[n] = sf
	return sf, nil
}

// Get returns the latest stored page of urlID, or ErrNotFound. A damaged
// record is an error naming its file and offset.
func (r *Reader) Get(urlID uint64) (*Page, error) {
	var (
		best    recordHeader
		bestRec []byte
		found   bool
	)
	for _, dr := range r.dirs {
		l, ok := dr.locate(urlID)
		if !ok {
			continue
		}
		bp := r.buffers.Get().(*[]byte)
		defer r.buffers.Put(bp)
		h, rec, err := dr.readRecord(l, *bp)
		if err != nil {
			return nil, err
		}
		if cap(rec) <= 1<<20 {
			*bp = rec[:0] // keep a grown buffer, unless it is huge
		}
		if h.urlID != urlID {
			return nil, fmt.Errorf("storage: %s: %w: index entry for URL id %d points at the record of id %d (segment %d, offset %d)",
				dr.dir, ErrCorrupt, urlID, h.urlID, l.seg, l.off)
		}
		if !found || h.fetchTime >= best.fetchTime {
			best, bestRec, found = h, rec, true
		}
	}
	if !found {
		return nil, ErrNotFound
	}
	dec := r.decoders.Get().(*decoder)
	defer r.decoders.Put(dec)
	return decodeRecord(best, bestRec, dec) // copies out of bestRec
}

// current reports whether the record of h at (dir i, l) is the one Get
// returns for its URL id: the index must point at it, and no other
// directory may hold a later fetch.
func (r *Reader) current(i int, l location, h recordHeader) bool {
	if got, ok := r.dirs[i].locate(h.urlID); !ok || got != l {
		return false
	}
	for j, dr := range r.dirs {
		if j == i {
			continue
		}
		ol, ok := dr.locate(h.urlID)
		if !ok {
			continue
		}
		oh, _, err := dr.readRecord(ol, nil)
		if err != nil || oh.urlID != h.urlID {
			continue
		}
		if oh.fetchTime > h.fetchTime || oh.fetchTime == h.fetchTime && j > i {
			return false
		}
	}
	return true
}

// Close releases the files.
func (r *Reader) Close() error {
	var err error
	for _, dr := range r.dirs {
		if cerr := dr.close(); err == nil {
			err = cerr
		}
	}
	r.dirs = nil
	return err
}

func (dr *dirReader) close() error {
	var err error
	for _, sf := range dr.segs {
		if cerr := sf.f.Close(); err == nil {
			err = cerr
		}
	}
	if dr.ix != nil {
		if cerr := dr.ix.close(); err == nil {
			err = cerr
		}
	}
	return err
}
