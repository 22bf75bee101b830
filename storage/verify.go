package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// This file holds how a Reader checks the index against the segments and
// replaces it when it is damaged: the index is a cache of what the
// segments hold, so its damage never costs a page.

// ixPath is the directory's index file, for messages.
func (dr *dirReader) ixPath() string { return filepath.Join(dr.dir, indexName) }

// A live writer's put stores an entry's fields one at a time, the CRC
// last, so a Reader on its store can read a mix that fails the CRC: find
// reads such an entry again, up to entryRereads times entryRereadWait
// apart, before it takes it for damage (a rebuild of the directory's view
// from all its segments, and damage reported for a store that has none).
const (
	entryRereads    = 5
	entryRereadWait = time.Millisecond
	// maxVerifyRereads bounds verifyIndex's rereads of a live store's
	// index, so that many damaged entries cost it no more than this many
	// pauses.
	maxVerifyRereads = 256
)

// find is locate that rebuilds dr's view when id's index entry is damaged;
// the error is ctx's, ending the rebuild.
func (r *Reader) find(ctx context.Context, dr *dirReader, id uint64) (location, bool, error) {
	l, ok, bad := dr.locate(id)
	for try := 0; bad && try < entryRereads; try++ {
		r.rereadWait()
		l, ok, bad = dr.locate(id)
	}
	if bad {
		why := "fails its CRC-32C"
		if v := dr.view.Load(); v.ix != nil && id < v.ix.entries() {
			if e, err := v.ix.entry(id); err != nil {
				why = fmt.Sprintf("cannot be read (%v)", err)
			} else if _, _, st := decodeEntry(id, e[:]); st == entryZero {
				why = fmt.Sprintf("is all zero, below URL id %d up to which every entry is set", v.ix.dense)
			}
		}
		if err := r.rebuild(ctx, dr, fmt.Errorf("storage: index %s: %w: entry of URL id %d at offset %d %s",
			dr.ixPath(), ErrCorrupt, id, entryOffset(id), why)); err != nil {
			return location{}, false, err
		}
		l, ok, _ = dr.locate(id)
	}
	return l, ok, nil
}

// current reports whether the record of h at (dir i, l) is the one Get
// returns for its URL id: the index must point at it, and no other
// directory may hold a later fetch. It checks the index as it goes: an
// entry that fails its checksum, is missing although the record is before
// the checkpoint, or points at anything but a later record of the same id
// makes the directory's view be rebuilt from the segments. viaIndex says
// the index entry points at it (not a record after the checkpoint): the
// caller counts it in dr.indexed (verifyIndex), once the page is decoded
// if it is current, at once if another directory's later fetch hides it.
// url is the record's URL: a later record of its id naming another URL
// is reported (noteMixed). The error is ctx's, ending a rebuild.
func (r *Reader) current(ctx context.Context, i int, l location, h recordHeader, url []byte) (cur, viaIndex bool, err error) {
	dr := r.dirs[i]
	got, ok, err := r.find(ctx, dr, h.urlID)
	if err != nil {
		return false, false, err
	}
	later, laterURL := dr.laterRecord(l, got, ok, h.urlID)
	// Stored again after OpenReader by a live writer: a Scan, a snapshot,
	// does not reach the later record, so this one stands for the page
	// (else the page would be in neither).
	again := later == recordThere && !got.before(dr.snapshotEnd())
	if again {
		got = l
	}
	if v := dr.view.Load(); !v.rebuilt && (!ok || got != l) {
		var why error
		switch {
		case !ok:
			why = fmt.Errorf("storage: index %s: %w: no entry for URL id %d (at offset %d), whose record is at %s offset %d",
				dr.ixPath(), ErrCorrupt, h.urlID, entryOffset(h.urlID), segmentName(l.seg), l.off)
		case !l.before(got) || later == recordNotThere:
			why = fmt.Errorf("storage: index %s: %w: entry of URL id %d (at offset %d) points at %s offset %d, which holds no later record of it",
				dr.ixPath(), ErrCorrupt, h.urlID, entryOffset(h.urlID), segmentName(got.seg), got.off)
		}
		if why != nil {
			if err := r.rebuild(ctx, dr, why); err != nil {
				return false, false, err
			}
			if got, ok, err = r.find(ctx, dr, h.urlID); err != nil {
				return false, false, err
			}
			later, laterURL = dr.laterRecord(l, got, ok, h.urlID)
		}
	}
	if !ok || got != l {
		if later == recordThere && !bytes.Equal(laterURL, url) {
			r.noteMixed(dr.dir, dr.dir, h.urlID, url, laterURL)
		}
		return false, false, nil
	}
	if v := dr.view.Load(); !v.rebuilt && !again {
		_, later := v.extra[h.urlID]
		viaIndex = !later
	}
	for j, odr := range r.dirs {
		if j == i {
			continue
		}
		ol, ok, err := r.find(ctx, odr, h.urlID)
		if err != nil {
			return false, false, err
		}
		if !ok || !ol.before(odr.snapshotEnd()) {
			continue // none, or one this Scan does not reach
		}
		oh, orec, err := odr.readRecord(ol, nil)
		if err != nil || oh.urlID != h.urlID {
			continue
		}
		if j > i && !bytes.Equal(recordURL(oh, orec), url) { // the pair's other scan sees it too
			r.noteMixed(dr.dir, odr.dir, h.urlID, url, recordURL(oh, orec))
		}
		if oh.fetchTime > h.fetchTime || oh.fetchTime == h.fetchTime && j > i {
			return false, viaIndex, nil
		}
	}
	return true, viaIndex, nil
}

// mixedURLs counts the URL ids two directories (or two records of one)
// hold under different URLs.
type mixedURLs struct {
	n          int64
	id         uint64 // the first one met
	urlA, urlB string
}

// noteMixed records that dir a holds id as urlA and dir b (perhaps a
// itself, in a later record) as urlB. A URL's id never changes (the URL
// tree numbers it once), so a re-crawl stores the same URL again: a
// different one is a page of another crawl - a directory, or segments,
// of another store mixed in - and the later fetch hides the other page.
func (r *Reader) noteMixed(a, b string, id uint64, urlA, urlB []byte) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.mixed == nil {
		r.mixed = map[[2]string]*mixedURLs{}
	}
	m := r.mixed[[2]string{a, b}]
	if m == nil {
		m = &mixedURLs{id: id, urlA: string(urlA), urlB: string(urlB)}
		r.mixed[[2]string{a, b}] = m
	}
	m.n++
}

// reportMixed notes as damage, once per pair of directories, what
// noteMixed recorded during a Scan: each such id is a page hidden.
func (r *Reader) reportMixed() {
	r.errMu.Lock()
	mixed := r.mixed
	r.mixed = nil
	r.errMu.Unlock()
	for dirs, m := range mixed {
		where := fmt.Sprintf("%s and %s", dirs[0], dirs[1])
		if dirs[0] == dirs[1] {
			where = "two records of " + dirs[0]
		}
		r.lost.Add(m.n)
		r.noteDamage(fmt.Errorf("storage: %w: %d URL ids name different URLs in %s, such as id %d: %q and %q: pages of another crawl mixed in? (the later fetch hides the other: %d pages lost)",
			ErrCorrupt, m.n, where, m.id, m.urlA, m.urlB, m.n))
	}
}

// recordAtEntry is what laterRecord found where an index entry points.
type recordAtEntry uint8

const (
	recordThere    recordAtEntry = iota // an intact record of the id
	recordNotThere                      // none (another id's, damage, nothing): the entry is wrong
	recordUnread                        // the read failed (EIO): the entry is not judged
)

// laterRecord reads the record of id at got, where dr's view has it, when
// that is after the record at l (found, ok): is it there, and its URL. A
// read that fails (a bad sector) says nothing about the index: the Scan
// reports the unreadable bytes, and the page they hold is lost, not the
// index damaged. Not after l (or not found) is recordNotThere, unread.
func (dr *dirReader) laterRecord(l, got location, ok bool, id uint64) (recordAtEntry, []byte) {
	if !ok || !l.before(got) {
		return recordNotThere, nil
	}
	h, rec, err := dr.readRecord(got, nil)
	switch {
	case err != nil && !errors.Is(err, ErrCorrupt):
		return recordUnread, nil
	case err != nil || h.urlID != id:
		return recordNotThere, nil
	}
	return recordThere, recordURL(h, rec)
}

// rebuild replaces dr's view by one built from all its segments, because
// of the index damage why, and says so. It reads every segment, as long as
// a Scan takes: when ctx ends it gives up, returning ctx's error, the
// view as it was (the index distrusted: a later lookup rebuilds it).
func (r *Reader) rebuild(ctx context.Context, dr *dirReader, why error) error {
	dr.rebuildMu.Lock()
	defer dr.rebuildMu.Unlock()
	if dr.view.Load().rebuilt {
		return nil
	}
	dr.distrust.Store(true)
	done := ctx.Done()
	m := map[uint64]location{}
	for _, sf := range dr.order {
		n := sf.num
		err := r.eachRecord(sf, 0, nil, func(off int64, h recordHeader, _ []byte) error {
			select {
			case <-done:
				return fmt.Errorf("storage: %s: rebuilding the index's view from the segments: %w", dr.dir, ctx.Err())
			default:
			}
			m[h.urlID] = location{n, off}
			return nil
		})
		if err != nil && ctx.Err() != nil {
			return err
		}
		if err != nil {
			r.noteDamage(err)
		}
	}
	bad := r.damagedEntries(dr, dr.view.Load())
	dr.view.Store(&dirView{extra: m, rebuilt: true})
	r.noteDamage(fmt.Errorf("%w%s; index rebuilt in memory from the segments, %s (kspider check --repair rewrites it)", why, bad, inMemory(len(m))))
	return nil
}

// damagedEntries says how many entries of dr's index fail their checks
// (judge), naming the first: a rebuild's cause names one entry, and the
// damage may be one bit or the whole file. Entries torn by a put cut
// short, over an earlier entry of an id with a record after the
// checkpoint (in v, the view before the rebuild), are a crash's leftovers,
// not counted; a live writer's entry caught mid-put is read again, up to
// maxVerifyRereads pauses in all, as verifyIndex does.
func (r *Reader) damagedEntries(dr *dirReader, v *dirView) string {
	ix := dr.ix
	if ix == nil {
		return ""
	}
	var (
		n       int64
		first   uint64
		rereads int
	)
	err := ix.eachWritten(func(id uint64, e []byte) {
		_, _, st := decodeEntry(id, e)
		for try := 0; dr.live && ix.judge(id, st) == entryBad && rereads < maxVerifyRereads && try < entryRereads; try++ {
			rereads++
			r.rereadWait()
			_, _, st = decodeEntry(id, e)
		}
		if _, later := v.extra[id]; later || ix.judge(id, st) != entryBad {
			return
		}
		if n == 0 {
			first = id
		}
		n++
	})
	switch {
	case err != nil:
		return fmt.Sprintf(" (the index's entries cannot all be read: %v)", err)
	case n == 1:
		return fmt.Sprintf(" (1 entry of the index fails its CRC-32C or is zeroed: URL id %d's, at offset %d)", first, entryOffset(first))
	case n > 1:
		return fmt.Sprintf(" (%d entries of the index fail their CRC-32C or are zeroed, the first URL id %d's, at offset %d)", n, first, entryOffset(first))
	}
	return ""
}

// checkCheckpoint notes damage when the segments end before the index
// checkpoint: everything before it was durable, so they were truncated or
// removed.
func (r *Reader) checkCheckpoint(dr *dirReader) {
	if dr.ix == nil || dr.ck.seg == 0 {
		return
	}
	sf := dr.segs[dr.ck.seg]
	switch {
	case sf == nil:
		r.noteDamage(fmt.Errorf("storage: %s: %w: segment %s, which the index checkpoint names, %s", dr.dir, ErrCorrupt, segmentPath(dr.dir, dr.ck.seg), segmentAbsent(dr.dir, dr.ck.seg)))
	case sf.size < dr.ck.off:
		r.noteDamage(fmt.Errorf("storage: %s: %w: truncated at offset %d, before the index checkpoint (%d): %d bytes lost", sf.path, ErrCorrupt, sf.size, dr.ck.off, dr.ck.off-sf.size))
	}
}

// TornEntries reports index entries that a writer killed mid-put left
// half written (fresh ones after the checkpoint, or an earlier entry of an
// id that has a record after the checkpoint, put over by a refetch or a
// "none" fill), as the segments' TornTail reports a half-written record:
// harmless (the segments answer for those ids, and the next writer's open
// rewrites the entries), but damage if no crash came (a stray write looks
// the same).
type TornEntries struct {
	Index string
	N     int64  // entries
	First uint64 // the first one's URL id
}

func (e *TornEntries) Error() string {
	return fmt.Sprintf("storage: index %s: %d entries torn by a put cut short, the first of URL id %d at offset %d, as an interrupted write leaves (the segments answer for them; the next writer rewrites them)",
		e.Index, e.N, e.First, entryOffset(e.First))
}

func (e *TornEntries) Unwrap() error { return ErrCorrupt }

// verifyIndex runs after a Scan of dr: it checks every entry of the index
// and counts the pages the index knew whose records Scan could not read: in
// a damaged region (counted in its Corruption's Lost), beyond the end of a
// truncated segment, or in a missing one. Entries failing their checksum
// are damage. When the view was rebuilt, the index known damaged, its
// intact entries still name pages: one whose id the segments hold no
// record of, pointing where the bytes are gone, is a page lost as it would
// be with the index sound (else the tools would report none lost while
// skipping damaged regions); the rest of the index is not judged again.
func (r *Reader) verifyIndex(dr *dirReader) {
	v := dr.view.Load()
	ix := dr.ix
	if ix == nil {
		return
	}
	regions := dr.regions
	sort.Slice(regions, func(a, b int) bool { return regions[a].Offset < regions[b].Offset })
	bySeg := map[string][]*Corruption{}
	for _, c := range regions {
		bySeg[c.File] = append(bySeg[c.File], c)
	}
	var (
		badEntries int64
		firstBad   uint64
		beyond     = map[uint32]int64{} // pages past the end of a segment
		missing    = map[uint32]int64{} // pages in a missing segment
		lost       int64
		rereads    int   // entries read again, up to maxVerifyRereads
		intact     int64 // entries pointing at a record Scan should have met
		torn       = &TornEntries{Index: ix.path}
	)
	// Entries at or after the end of the last segment as OpenReader saw it
	// may be a live writer's: not judged here. Those before the
	// checkpoint were durable, so the end of a segment truncated before
	// it does not excuse them: they are lost. Nor does it excuse any when
	// no writer was at work at OpenReader and none has opened since (each
	// writes a checkpoint as it opens): an entry is set only after its
	// record is synced, so a crash's torn tail has none, and one beyond
	// the end names a durable page lost (the segment cut, or a damaged
	// record a writer's recovery took for a torn one and cut away).
	tailExcused := dr.live || ix.checkpointedSince()
	var end location
	segs := map[uint32]*segmentFile{}
	for _, sf := range dr.order {
		segs[sf.num] = sf
		end = location{sf.num, sf.size}
	}
	if end.before(dr.ck) {
		end = dr.ck
	}
	err := ix.eachWritten(func(id uint64, e []byte) {
		seg, off, st := decodeEntry(id, e)
		if v.rebuilt {
			// extra holds every record the segments have: a page
			// there is not lost, wherever the entry points.
			if _, held := v.extra[id]; held || ix.judge(id, st) != entrySet {
				return
			}
			if tailExcused && !(location{seg, off}).before(end) {
				return
			}
			if lostAt(seg, off, segs, bySeg, missing, beyond) {
				lost++
			}
			// Else it points at intact bytes holding no record of
			// it: a damaged index may say anything there, so it
			// is not taken for a page lost.
			return
		}
		for try := 0; dr.live && st == entryBad && rereads < maxVerifyRereads && try < entryRereads; try++ {
			rereads++ // one a live writer is storing reads whole once it is done (find)
			r.rereadWait()
			seg, off, st = decodeEntry(id, e)
		}
		if _, later := v.extra[id]; (id >= ix.dense && st == entryTorn) || (st == entryBad && later) {
			// Torn by a writer killed mid-put: written after the
			// checkpoint fresh (the CRC field still zero), or over an
			// earlier entry (a refetch's, a "none" entry put when a
			// higher id came first, a recovery's "none" fill, below
			// dense too) with a record after the checkpoint, which
			// answers for id and is indexed again at the next open.
			if torn.N == 0 {
				torn.First = id
			}
			torn.N++
			return
		}
		switch ix.judge(id, st) {
		case entryEmpty:
			return
		case entryBad:
			if badEntries == 0 {
				firstBad = id
			}
			badEntries++
			return
		}
		if _, ok := v.extra[id]; ok {
			return // a later record, after the checkpoint
		}
		if tailExcused && !(location{seg, off}).before(end) {
			return // written after OpenReader, by a live writer
		}
		if !lostAt(seg, off, segs, bySeg, missing, beyond) {
			intact++
			return
		}
		lost++
	})
	if err != nil {
		r.noteDamage(err)
		return
	}
	// Every such entry points at a record of its URL id that Scan met and
	// found the index pointing at, unless it points elsewhere: into the
	// middle of a record, or at another id's record written where a
	// damaged one was cut away. The page has no record here then (one
	// elsewhere in the segments would have made the view be rebuilt).
	// A live writer's entries may name records beyond OpenReader's view.
	if dangling := intact - dr.indexed; dangling > 0 && !dr.live && !v.rebuilt {
		lost += dangling
		r.noteDamage(fmt.Errorf("storage: index %s: %w: %d entries point at no record of their URL id in the segments: %d pages lost (kspider check --repair rebuilds the index)",
			ix.path, ErrCorrupt, dangling, dangling))
	}
	r.lost.Add(lost)
	if torn.N > 0 {
		r.noteDamage(torn)
	}
	if badEntries > 0 {
		r.noteDamage(fmt.Errorf("storage: index %s: %w: %d entries fail their CRC-32C or are zeroed, the first of URL id %d at offset %d (kspider check --repair rebuilds the index)",
			ix.path, ErrCorrupt, badEntries, firstBad, entryOffset(firstBad)))
	}
	for seg, k := range missing {
		r.noteDamage(fmt.Errorf("storage: %s: %w: %d pages lost: the index has them in segment %s, which %s", dr.dir, ErrCorrupt, k, segmentPath(dr.dir, seg), segmentAbsent(dr.dir, seg)))
	}
	for seg, k := range beyond {
		sf := segs[seg]
		r.noteDamage(fmt.Errorf("storage: %s: %w: %d pages lost: the index has them beyond the end of the file (%d bytes); truncated?", sf.path, ErrCorrupt, k, sf.size))
	}
}

// lostAt reports whether an index entry's record at (seg, off) is gone,
// counting it where: in segment seg missing, beyond its end, or in one of
// its damaged regions bySeg (that Corruption's Lost).
func lostAt(seg uint32, off int64, segs map[uint32]*segmentFile, bySeg map[string][]*Corruption, missing, beyond map[uint32]int64) bool {
	sf := segs[seg]
	switch {
	case sf == nil:
		missing[seg]++
	case off+recordHeaderSize > sf.size:
		beyond[seg]++
	default:
		rs := bySeg[sf.path]
		k := sort.Search(len(rs), func(k int) bool { return rs[k].Offset > off }) - 1
		if k < 0 || off >= rs[k].Offset+rs[k].Skipped {
			return false
		}
		rs[k].Lost++
	}
	return true
}

// segmentAbsent says why segment n of dir is not among the segments read
// (listSegments takes files of their own only): missing, or what stands
// under its name. A FIFO, a directory or a link looping to itself was
// reported missing, and the operator, finding the name there, looked for
// another cause.
func segmentAbsent(dir string, n uint32) string {
	path := segmentPath(dir, n)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "is missing"
	case err != nil:
		return fmt.Sprintf("cannot be looked at (%v), so is read as missing", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := os.Stat(path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is said already
			}
			return fmt.Sprintf("is a symbolic link that leads to no file (%v), not a segment file, so is read as missing", err)
		}
		return "is a symbolic link, not a segment file of the store's own, so is read as missing"
	}
	if fi.Mode().IsRegular() {
		// Made between the listing and now: a live writer's.
		return "was not there when the store was opened"
	}
	return "is " + fileKind(fi.Mode()) + ", not a segment file, so is read as missing"
}

// fileKind names what a file of mode m is, for a message about something
// standing where a store file should be.
func fileKind(m fs.FileMode) string {
	if m.IsRegular() {
		return "a file"
	}
	what := map[fs.FileMode]string{fs.ModeDir: "a directory", fs.ModeNamedPipe: "a FIFO (named pipe)",
		fs.ModeSymlink: "a symbolic link", fs.ModeSocket: "a socket", fs.ModeDevice: "a device",
		fs.ModeDevice | fs.ModeCharDevice: "a character device"}[m.Type()]
	if what == "" {
		what = fmt.Sprintf("a file of type %v", m.Type())
	}
	return what
}

// noteStrays notes as damage each name of a segment under which something
// else stands (odd: a link, a FIFO, a directory) that no other report
// names: after the last segment file (nums), not the one the index
// checkpoint names. Those in a gap of the numbering gapAbsent names, and
// the checkpoint's checkCheckpoint. Ignored, it left the tools exiting 0
// and kspider check saying nothing, whether a segment of the store's had
// been replaced by it or the name was a slip.
func (r *Reader) noteStrays(dr *dirReader, nums, odd []uint32) {
	var last uint32
	if len(nums) > 0 {
		last = nums[len(nums)-1]
	}
	for _, n := range odd {
		if n < last || dr.ix != nil && n == dr.ck.seg {
			continue
		}
		after := "there are no segment files"
		if last > 0 {
			after = "after the last segment file, " + segmentName(last)
		}
		r.noteDamage(fmt.Errorf("storage: %s: %w: segment %s %s (%s); if it is not this store's, move it out of the directory",
			dr.dir, ErrCorrupt, segmentPath(dr.dir, n), segmentAbsent(dr.dir, n), after))
	}
}

// maxGapNamed bounds the files gapAbsent describes in one gap.
const maxGapNamed = 3

// gapAbsent says why segments from to to of dir, a gap in the numbering
// of those read, are not among them: missing, or, for each under whose
// name something else stands (a FIFO, a directory, a link), what, as
// segmentAbsent says it.
func gapAbsent(dir string, from, to uint32) string {
	if from == to {
		return fmt.Sprintf("segment %s %s", segmentPath(dir, from), segmentAbsent(dir, from))
	}
	said := fmt.Sprintf("segments %s to %s are missing", segmentName(from), segmentName(to))
	// One listing rather than a look at each number: a stray
	// 99999999.seg makes a gap of millions.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Sprintf("%s (listing %s again to see what stands under their names: %v)", said, dir, err)
	}
	var odd []string
	for _, e := range ents {
		if n, ok := segmentNumber(e.Name()); ok && n >= from && n <= to {
			odd = append(odd, fmt.Sprintf("%s %s", segmentPath(dir, n), segmentAbsent(dir, n)))
		}
	}
	if len(odd) > maxGapNamed {
		odd = append(odd[:maxGapNamed], fmt.Sprintf("%d more not segment files", len(odd)-maxGapNamed))
	}
	if len(odd) > 0 {
		said += " or not segment files: " + strings.Join(odd, "; ")
	}
	return said
}

// checkpointedSince reports whether a writer has written a checkpoint
// into ix since it was opened (its header's number moved on), or the
// header cannot tell.
func (ix *index) checkpointedSince() bool {
	var hdr []byte
	if err := ix.touch(func() { hdr = append(hdr, ix.data[:indexHeaderSize]...) }); err != nil {
		return true
	}
	h, _, err := readIndexHeader(ix.path, hdr)
	return err != nil || h.seq != ix.seq
}
