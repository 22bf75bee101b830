package communicator

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// A damaged record costs only itself: the scan resynchronises on the next
// offset where a whole record verifies (a length within bounds, a payload
// inside the file, its CRC-32C, a known record type), so the intact
// records after damage are still delivered. A false resync needs a CRC
// match by chance (2^-32 per offset); the URLs spilled are normalised
// ASCII, so a record hidden inside a URL cannot have the zero high bytes
// a record length starts with. The search looks at each offset once and
// checksums at most one record's bytes there: linear in the damaged bytes
// times the largest record.

// spillRegion is a stretch of a spill file the scan skipped.
type spillRegion struct {
	start, end int64  // end: the next intact record, or the end of the file
	why        string // what is wrong with the record at start (names the offset)
	torn       bool   // a last record cut short by the end of the file: a crash, not damage
}

// spillScan is what a pass over a spill file found.
type spillScan struct {
	version uint16 // the header's format version
	good    int64  // end of the intact part: where a damaged tail starts, else the file size (0: bad header)
	// zerosFrom is where the zeros that end a damaged tail begin (at or
	// after good; the file size if it does not end in zeros).
	zerosFrom int64
	consumed  int64 // value of the last mark
	items     int   // intact item records
	unread    int   // of them, at or after consumed
	// unreadControl is how many of unread are control items (a tag at
	// or above the controlTag scanSpill was given; 0: none are).
	unreadControl int
	// bad holds damaged stretches in file order: the first
	// spillDescribed with what is wrong with them, then the first
	// spillBadKept after the last mark (where a later mark may point,
	// and which the reader jumps over) without, and the latest (a
	// damaged tail is said). All are counted in skippedBytes and
	// regions.
	bad []spillRegion
	// unlistedFrom and unlistedTo (0, 0: none) span the stretches after
	// the last mark not in bad, between those kept and the latest: the
	// reader finds them again (keepUnlisted).
	unlistedFrom, unlistedTo int64
	skippedBytes             int64
	regions                  int
	// undescribedFrom is where the first stretch not described starts
	// (0: all are).
	undescribedFrom int64
}

// spillDescribed bounds the damaged stretches a scan keeps described:
// each held its message for the whole scan, and a file damaged every few
// records (a hostile one: a stretch per 12 bytes) made gigabytes of them.
// The rest are counted, and the scan keeps of them only what marks need.
const spillDescribed = 1024

// skipped returns the bytes and regions the scan skipped.
func (sc *spillScan) skipped() (bytes int64, regions int) {
	return sc.skippedBytes, sc.regions
}

// undescribed returns the bytes and number of the stretches counted but
// not kept described (why "") in bad: the ones to sum up in one line.
func (sc *spillScan) undescribed() (bytes int64, regions int) {
	bytes, regions = sc.skipped()
	for _, r := range sc.bad {
		if r.why != "" {
			bytes -= r.end - r.start
			regions--
		}
	}
	return bytes, regions
}

// undescribedText says what the n stretches of bytes bytes the scan sc
// counted but did not describe are, from where.
func undescribedText(sc *spillScan, n int, bytes int64) string {
	return fmt.Sprintf("%d more damaged stretches from offset %d on (%d bytes), each skipped to the next intact record, not described one by one (the first %d are)", n, sc.undescribedFrom, bytes, spillDescribed)
}

// addBad records the damaged stretch from off to next.
func (sc *spillScan) addBad(off, next int64, why string, torn bool) {
	sc.skippedBytes += next - off
	if n := len(sc.bad); n > 0 && sc.bad[n-1].end == off {
		// The record after a damaged stretch fails too (a mark pointing
		// nowhere, and what follows one): one damaged stretch, not a
		// crash's torn write even if it ends so (the stretch before
		// does not reach the end, so it is not torn).
		sc.bad[n-1].end = next
		return
	}
	sc.regions++
	if n := len(sc.bad); n > spillDescribed {
		sc.bad[n-1].why = "" // described only while the latest
		if sc.unlistedTo != 0 || n-1-spillDescribed == spillBadKept {
			// A file damaged every few records kept them all, 48 bytes
			// each: the latest joins the span of those not listed.
			if sc.unlistedTo == 0 {
				sc.unlistedFrom = sc.bad[n-1].start
			}
			sc.unlistedTo = sc.bad[n-1].end
			sc.bad = sc.bad[:n-1]
		}
	} else if n == spillDescribed {
		sc.undescribedFrom = off
	}
	sc.bad = append(sc.bad, spillRegion{start: off, end: next, why: why, torn: torn})
}

// forgetBelow drops the undescribed stretches that end at or before the
// mark m: a later mark is at or after it (once they are at least half of
// those undescribed: each is copied at most once per halving).
func (sc *spillScan) forgetBelow(m int64) {
	if sc.unlistedTo <= m {
		sc.unlistedFrom, sc.unlistedTo = 0, 0
	} else {
		sc.unlistedFrom = max(sc.unlistedFrom, m)
	}
	if len(sc.bad) <= spillDescribed {
		return
	}
	rest := sc.bad[spillDescribed:]
	i, _ := slices.BinarySearchFunc(rest, m, func(r spillRegion, m int64) int { return cmp.Compare(r.end, m+1) })
	if i == 0 || 2*i < len(rest) {
		return
	}
	sc.bad = sc.bad[:spillDescribed+copy(rest, rest[i:])]
}

// spillWindow reads a spill file through one buffer, so the scan and its
// resync search make few system calls.
type spillWindow struct {
	r         io.ReaderAt
	size      int64
	version   uint16 // the file's format (recSum)
	buf       []byte
	off       int64 // file offset of buf[0]
	zerosFrom int64 // see resync
	chunk     int64 // what a read fetches at least (0: spillWindowSize)
}

const spillWindowSize = 256 << 10

// at returns the n bytes at off, which the caller has checked lie inside
// the file.
func (w *spillWindow) at(off int64, n int) ([]byte, error) {
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off:][:n], nil
	}
	chunk := w.chunk
	if chunk == 0 {
		chunk = spillWindowSize
	}
	m := min(max(int64(n), chunk), w.size-off)
	if int64(cap(w.buf)) < m {
		w.buf = make([]byte, m)
	}
	w.buf = w.buf[:m]
	w.off = off
	if k, err := w.r.ReadAt(w.buf, off); int64(k) < m {
		w.buf = w.buf[:0]
		return nil, fmt.Errorf("record at offset %d: %v", off, err)
	}
	return w.buf[:n], nil
}

// recProblem is what is wrong with a record, formatted only when it is
// reported (the resync search meets one at nearly every offset).
type recProblem struct {
	kind uint8 // 0: none
	off  int64
	n    int64 // the record length
	typ  byte  // the record type
	err  error // the item parse error
}

const (
	probNone = iota
	probShortHead
	probLength
	probPastEnd
	probChecksum
	probItem
	probMark
	probType
)

func (p recProblem) String() string {
	switch p.kind {
	case probShortHead:
		return fmt.Sprintf("truncated record header at offset %d", p.off)
	case probLength:
		return fmt.Sprintf("bad record length %d at offset %d", p.n, p.off)
	case probPastEnd:
		return fmt.Sprintf("record of %d bytes at offset %d runs past the end of the file", p.n, p.off)
	case probChecksum:
		return fmt.Sprintf("checksum mismatch in record at offset %d", p.off)
	case probItem:
		return fmt.Sprintf("record at offset %d: %v", p.off, p.err)
	case probMark:
		return fmt.Sprintf("bad mark record at offset %d", p.off)
	case probType:
		return fmt.Sprintf("unknown record type %d at offset %d", p.typ, p.off)
	}
	return ""
}

// short reports whether the record is cut off by the end of the file.
func (p recProblem) short() bool { return p.kind == probShortHead || p.kind == probPastEnd }

// record checks the record at off and returns its payload, or what is
// wrong with it. Marks are only checked for their length here; their
// value depends on where the scan is.
func (w *spillWindow) record(off int64, maxURL int) ([]byte, recProblem, error) {
	if w.size-off < recHead {
		return nil, recProblem{kind: probShortHead, off: off}, nil
	}
	head, err := w.at(off, recHead)
	if err != nil {
		return nil, recProblem{}, err
	}
	n := int64(binary.BigEndian.Uint32(head))
	sum := binary.BigEndian.Uint32(head[4:])
	if n < 2 || n > int64(1+binary.MaxVarintLen64+maxURL) {
		return nil, recProblem{kind: probLength, off: off, n: n}, nil
	}
	if n > w.size-off-recHead {
		return nil, recProblem{kind: probPastEnd, off: off, n: n}, nil
	}
	p, err := w.at(off+recHead, int(n))
	if err != nil {
		return nil, recProblem{}, err
	}
	if recSum(w.version, off, p) != sum {
		return nil, recProblem{kind: probChecksum, off: off}, nil
	}
	switch p[0] {
	case recItem:
		if _, _, err := parseItemRecord(p, maxURL); err != nil {
			return nil, recProblem{kind: probItem, off: off, err: err}, nil
		}
	case recMark:
		if n != 9 {
			return nil, recProblem{kind: probMark, off: off}, nil
		}
	default:
		return nil, recProblem{kind: probType, off: off, typ: p[0]}, nil
	}
	return p, recProblem{}, nil
}

// resync returns the first offset at or after from where a whole record
// verifies, or the file size; w.zerosFrom is then where the zeros that end
// the file begin (the size if it does not end in zeros).
func (w *spillWindow) resync(from int64, maxURL int) (int64, error) {
	w.zerosFrom = w.size
	for off := from; off+recHead <= w.size; off++ {
		var err error
		if off, err = w.candidate(off); err != nil || off+recHead > w.size {
			return w.size, err
		}
		_, prob, err := w.record(off, maxURL)
		if err != nil {
			return 0, err
		}
		if prob.kind == probNone {
			return off, nil
		}
	}
	return w.size, nil
}

// candidate returns the first offset at or after off where a record could
// begin (or one past the last where a header fits): its length field, 2
// to under 2^16, is two zero bytes and then a nonzero one among two. So
// a run of zeros (a file extended, sparse or not, or a crash's
// zero-filled tail) is passed by the word, its holes without reading
// them, and other damage by the pair of zero bytes, where each offset
// was checked as a record: minutes for a gigabyte, hours for a sparse
// terabyte.
func (w *spillWindow) candidate(off int64) (int64, error) {
	run := int64(-1) // where the zeros under way began
	for off+recHead <= w.size {
		// What the window holds from off on, or a window from off: a
		// damaged record's resync stays in the window it is in.
		b := w.buf[min(max(off-w.off, 0), int64(len(w.buf))):]
		if off < w.off || len(b) < recHead {
			var err error
			if b, err = w.at(off, int(min(spillWindowSize, w.size-off))); err != nil {
				return 0, err
			}
		}
		i := 0
		for i+4 <= len(b) {
			if b[i+2]|b[i+3] != 0 {
				run = -1
			}
			switch {
			case b[i+2]|b[i+3] == 0:
				if run < 0 {
					run = off + int64(i) + 2
				}
				j := nonZero(b[i+2:])
				if j < 0 {
					i = max(i+1, len(b)-3)
					continue
				}
				run = -1
				i = max(i+1, i+2+j-3)
			case b[i]|b[i+1] != 0:
				k := bytes.Index(b[i+1:], []byte{0, 0})
				if k < 0 {
					i = max(i+1, len(b)-1)
					continue
				}
				i += 1 + k
			default:
				return off + int64(i), nil
			}
		}
		next := off + int64(i)
		if run >= 0 && next >= off+int64(len(b))-3 {
			// Zeros to the window's end: a hole after them is zeros too.
			data, err := seekData(w.r, off+int64(len(b)))
			if err != nil {
				return 0, err
			}
			if data >= w.size {
				w.zerosFrom = run
				return w.size, nil
			}
			next = max(next, data-3)
		}
		off = next
	}
	return off, nil
}

// zerosBack moves from, where zeros run to the end of the file, back over
// the zeros just before it, down to good at most: the search that found
// the run starts a few bytes into it.
func zerosBack(r io.ReaderAt, good, from int64) (int64, error) {
	lo := max(good, from-recHead)
	b := make([]byte, from-lo)
	if _, err := r.ReadAt(b, lo); err != nil {
		return 0, fmt.Errorf("record at offset %d: %v", lo, err)
	}
	for from > lo && b[from-lo-1] == 0 {
		from--
	}
	return from, nil
}

// nonZero returns the index of the first nonzero byte of b, or -1.
func nonZero(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// seekData returns the first offset at or after off that is not in a hole
// of r, if r is a file whose system says (SEEK_DATA); else off. Past the
// last data it returns the size.
func seekData(r io.ReaderAt, off int64) (int64, error) {
	f, ok := r.(*os.File)
	if !ok {
		return off, nil
	}
	d, err := f.Seek(off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return math.MaxInt64, nil // no data after off: holes to the end
	case err != nil:
		return off, nil // not supported here: read the zeros
	}
	return max(d, off), nil
}

// errSpillHeader marks a spill file whose header is not this file's: the
// endpoint moves the whole file aside.
var errSpillHeader = errors.New("bad header at offset 0 (magic, version, node ids or checksum)")

// errSpillNewer marks a spill file of a later format version than this
// build reads: refused, not moved aside as damage, so that the build that
// wrote it still delivers its items.
var errSpillNewer = errors.New("a spill file of a later build")

// errSpillUnwritten marks a spill file that holds nothing, not even its
// whole header: empty, a part of its header, or zeros. A start creates
// the file and writes its header without an fsync (it holds nothing yet),
// so a crash soon after may leave it so; the endpoint writes the header.
var errSpillUnwritten = errors.New("no header, and nothing else: a file created but not yet written when a crash came (or on a full disk)")

// scanSpill checks a spill file of size bytes record by record, skipping
// damaged stretches (sc.bad) to the next intact record. The error is
// errSpillUnwritten for a file that holds nothing, errSpillHeader for a
// header that is not this file's (or a file shorter than one), else a
// read that failed. controlTag is Config.ControlTag, for unreadControl.
func scanSpill(r io.ReaderAt, size int64, self, peer NodeID, maxURL int, controlTag uint64) (sc spillScan, err error) {
	hdr := make([]byte, min(size, spillHeader))
	if n, err := r.ReadAt(hdr, 0); n < len(hdr) {
		return sc, fmt.Errorf("header at offset 0: %v", err)
	}
	partOf := func(version uint16) bool { return bytes.Equal(hdr, spillHeaderOf(version, self, peer)[:len(hdr)]) }
	if size < spillHeader && (partOf(spillVersion) || partOf(1)) || size <= spillHeader && nonZero(hdr) < 0 {
		return sc, errSpillUnwritten
	}
	if size < spillHeader {
		return sc, fmt.Errorf("%w: the file has %d bytes", errSpillHeader, size)
	}
	// Version 1's records are read as they were written (recSum).
	sc.version = binary.BigEndian.Uint16(hdr[4:])
	if sc.version > spillVersion && partOf(sc.version) {
		// Whole, checksum and all: a later build's, not damage.
		return sc, fmt.Errorf("%w: format version %d at offset 4; this build reads versions 1 to %d", errSpillNewer, sc.version, spillVersion)
	}
	if sc.version < 1 || sc.version > spillVersion || !partOf(sc.version) {
		return sc, errSpillHeader
	}
	sc.consumed = spillHeader
	w := &spillWindow{r: r, size: size, version: sc.version, zerosFrom: size}
	// look reads the records marks name, behind the scan, in small
	// reads of its own: w's window stays where the scan is.
	look := &spillWindow{r: r, size: size, version: sc.version, chunk: spillLookChunk}
	// The items after the last mark taken are counted as the scan meets
	// them; those between the place it names and itself, once, at the
	// end (countItems). Keeping the offset of every record after the
	// last mark, to count and check marks by, cost 16 bytes a record and
	// more than the file's size for a file of no mark (a peer down).
	lastMark := int64(spillHeader)
	var after, afterControl int
	off := int64(spillHeader)
	for off < size {
		p, prob, err := w.record(off, maxURL)
		if err != nil {
			return sc, err
		}
		if prob.kind == probNone && p[0] == recMark {
			m, ok, err := sc.markTo(look, int64(binary.BigEndian.Uint64(p[1:])), off, maxURL)
			if err != nil {
				return sc, err
			}
			if !ok {
				// A whole record whose value is wrong: only it is
				// skipped, so the scan walks the same records, marks or
				// not, as countItems and the reader do.
				sc.addBad(off, off+recHead+int64(len(p)), recProblem{kind: probMark, off: off}.String(), false)
				off += recHead + int64(len(p))
				continue
			}
			sc.consumed, lastMark = m, off
			after, afterControl = 0, 0
			sc.forgetBelow(m)
		}
		if prob.kind != probNone {
			short := prob.short()
			next, err := w.resync(off+1, maxURL)
			if err != nil {
				return sc, err
			}
			sc.addBad(off, next, prob.String(), short && next == size)
			off = next
			continue
		}
		if p[0] == recItem {
			sc.items++
			after++
			if tag, _, err := parseItemRecord(p, maxURL); err == nil && isControl(controlTag, tag) {
				afterControl++
			}
		}
		off += recHead + int64(len(p))
	}
	sc.good, sc.zerosFrom = size, size
	if n := len(sc.bad); n > 0 && sc.bad[n-1].end == size {
		sc.good = sc.bad[n-1].start
		// The last resync's: the damaged tail may end in zeros, which
		// hold nothing to keep aside (maybe all of it: a file extended).
		if sc.zerosFrom, err = zerosBack(r, sc.good, w.zerosFrom); err != nil {
			return sc, err
		}
	}
	before, beforeControl, err := countItems(w, sc.consumed, lastMark, maxURL, controlTag)
	if err != nil {
		return sc, err
	}
	sc.unread, sc.unreadControl = before+after, beforeControl+afterControl
	return sc, nil
}

// spillLookChunk is what a read of a record a mark names fetches: a
// little past it, as the next mark usually names a place a little later.
const spillLookChunk = 4 << 10

// markTo checks the value m of the mark at off against what the scan
// found before it: it must name a place from the last mark taken to the
// mark itself where a record lies (one that verifies, or a damaged
// stretch's start), or one inside a damaged stretch, which is then
// acknowledged to its end (the rest of the stretch is lost anyway). It
// returns the place acknowledged, and whether the mark holds.
func (sc *spillScan) markTo(look *spillWindow, m, off int64, maxURL int) (int64, bool, error) {
	if m < sc.consumed || m > off {
		return 0, false, nil
	}
	if m == sc.consumed || m == off {
		return m, true, nil
	}
	// The stretches listed are in file order: the one m may lie in is
	// the last that starts at or before it (a search, not a pass over
	// them all for every mark: hours for a large file damaged in many
	// places).
	i, found := slices.BinarySearchFunc(sc.bad, m, func(r spillRegion, m int64) int { return cmp.Compare(r.start, m) })
	if found {
		return m, true, nil
	}
	if i > 0 && m < sc.bad[i-1].end {
		return sc.bad[i-1].end, true, nil
	}
	_, prob, err := look.record(m, maxURL)
	if err != nil {
		return 0, false, err
	}
	if prob.kind == probNone {
		return m, true, nil
	}
	if m >= sc.unlistedFrom && m < sc.unlistedTo {
		// Among the stretches not listed: the one m lies in ends at the
		// first record at or after m that verifies (this mark at the
		// latest). The next mark taken names a place after it, so these
		// searches cover the file once.
		end, err := look.resync(m, maxURL)
		if err != nil {
			return 0, false, err
		}
		return end, end <= off, nil
	}
	return 0, false, nil
}

// countItems counts the intact items, and the control items among them,
// of the records from from to to, walking them as the scan does.
func countItems(w *spillWindow, from, to int64, maxURL int, controlTag uint64) (items, control int, err error) {
	for off := from; off < to; {
		p, prob, err := w.record(off, maxURL)
		if err != nil {
			return 0, 0, err
		}
		if prob.kind != probNone {
			if off, err = w.resync(off+1, maxURL); err != nil {
				return 0, 0, err
			}
			continue
		}
		if p[0] == recItem {
			items++
			if tag, _, err := parseItemRecord(p, maxURL); err == nil && isControl(controlTag, tag) {
				control++
			}
		}
		off += recHead + int64(len(p))
	}
	return items, control, nil
}
