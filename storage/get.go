package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// This file holds how a Reader finds the record of one URL id (Get).

// ErrNotFound is returned by Get for a URL id with no stored record.
var ErrNotFound = errors.New("storage: no stored page for this URL id")

// locate returns where dr holds the current record of id. bad reports an
// index entry that fails its checksum.
func (dr *dirReader) locate(id uint64) (l location, ok, bad bool) {
	v := dr.view.Load()
	el, inExtra := v.extra[id]
	if v.ix == nil {
		return el, inExtra, false
	}
	seg, off, st := v.ix.lookup(id)
	l = location{seg, off}
	if inExtra && !(st == entrySet && el.before(l)) {
		// extra has the records after the checkpoint, which the index
		// may lack; an entry naming a later record is a live writer's,
		// the page stored again since OpenReader.
		return el, true, false
	}
	return l, st == entrySet, st == entryBad
}

// snapshotEnd is where the segments ended at OpenReader: what a Scan reads.
func (dr *dirReader) snapshotEnd() location {
	if len(dr.order) == 0 {
		return location{}
	}
	last := dr.order[len(dr.order)-1]
	return location{last.num, last.size}
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
	if sf.bad.Load() {
		return h, nil, fmt.Errorf("storage: %s: %w: index points at offset %d of a segment with no record of this store's", sf.path, ErrCorrupt, l.off)
	}
	if l.off < segmentHeaderV2Size {
		return h, nil, fmt.Errorf("storage: %s: %w: index points at offset %d, inside the segment header", sf.path, ErrCorrupt, l.off)
	}
	const first = 16 << 10
	buf = grow(buf[:0], first)[:first]
	n, err := sf.ra.ReadAt(buf, l.off)
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
		if _, err := sf.ra.ReadAt(buf[n:], l.off+int64(n)); err != nil {
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
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w: index points at segment %d, which cannot be opened: %v", dr.dir, ErrCorrupt, n, err)
	}
	b := make([]byte, segmentHeaderSize)
	k, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	h, err := checkSegmentHeader(b[:k], n)
	if err == nil && h.store != (storeID{}) && dr.store != (storeID{}) && h.store != dr.store {
		err = foreignSegment(h.store, dr.store)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: %s: %w", path, err)
	}
	// Not added to order: a Scan stays a snapshot of OpenReader's moment.
	sf := &segmentFile{f: f, ra: f, path: path, num: n}
	dr.segs[n] = sf
	return sf, nil
}

// Get returns the latest stored page of urlID, or ErrNotFound. A damaged
// record is an error naming its file and offset.
func (r *Reader) Get(urlID uint64) (*Page, error) {
	var (
		best    recordHeader
		bestRec []byte
		bestAt  string // its file and offset, for an error
		found   bool
	)
	for _, dr := range r.dirs {
		// Not interruptible: a rebuild of the view, which reads every
		// segment, runs to its end.
		l, ok, _ := r.find(context.Background(), dr, urlID)
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
			bestAt = fmt.Sprintf("%s at offset %d", segmentPath(dr.dir, l.seg), l.off)
		}
	}
	if !found {
		return nil, ErrNotFound
	}
	dec := r.decoders.Get().(*decoder)
	defer r.decoders.Put(dec)
	p, err := decodeRecord(best, bestRec, dec) // copies out of bestRec
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", bestAt, err)
	}
	return p, nil
}
