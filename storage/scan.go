package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
)

// Scan calls fn for every stored page, the latest record of each URL id
// only (see the package doc), reading all directories in parallel.
//
// fn is called concurrently, from one goroutine per directory; it must be
// safe for that. Each Page is fn's to keep. Within a directory pages come
// in the order they were written. Damaged records are skipped and counted
// (Stats, Skipped); the scan carries on behind them. Scan stops at the
// first error fn returns, or when ctx ends, and returns that error.
func (r *Reader) Scan(ctx context.Context, fn func(p *Page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for i := range r.dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.scanDir(ctx, i, fn); err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func (r *Reader) scanDir(ctx context.Context, i int, fn func(p *Page) error) error {
	dr := r.dirs[i]
	dec := new(decoder)
	defer dec.close()
	dr.regions = dr.regions[:0]
	note := func(c *Corruption) {
		r.noteCorruption(c)
		dr.regions = append(dr.regions, c)
	}
	for k, sf := range dr.order {
		n := sf.num
		last := k == len(dr.order)-1
		note := func(c *Corruption) {
			c.TornTail = last && c.Offset+c.Skipped == sf.size && !(location{n, c.Offset}).before(dr.ck)
			if c.TornTail && dr.live {
				r.note(fmt.Sprintf("%s: a record being written at offset %d by the running store, not read", sf.path, c.Offset))
				return
			}
			note(c)
		}
		var pos int64 // how far into sf the scan has counted (Progress)
		err := r.eachRecord(sf, segmentHeaderSize, note, func(off int64, h recordHeader, rec []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			end := off + int64(h.length)
			r.scanned.Add(end - pos)
			pos = end
			if !r.current(i, location{n, off}, h) {
				r.superseded.Add(1)
				return nil
			}
			p, err := decodeRecord(h, rec, dec)
			if err != nil {
				// The CRC matched, so the writer stored a body its codec
				// cannot read back: report it like any damaged record.
				note(&Corruption{File: sf.path, Offset: off, Skipped: int64(h.length), Reason: err})
				return nil
			}
			r.records.Add(1)
			return fn(p)
		})
		if err != nil {
			return err
		}
		r.scanned.Add(sf.size - pos) // a damaged tail, or a segment skipped whole
	}
	r.verifyIndex(dr)
	return nil
}

// Progress says how far a Scan has got: bytes of segment files read so far
// (damaged regions included) out of the bytes of all segments as they were
// at OpenReader. It may be called while Scan runs, from any goroutine.
func (r *Reader) Progress() (scanned, total int64) {
	for _, dr := range r.dirs {
		for _, sf := range dr.order {
			total += sf.size
		}
	}
	return r.scanned.Load(), total
}

// verifyIndex runs after a Scan of dr: it checks every entry of the index
// (unless the view was rebuilt, the index being known damaged) and counts
// the pages the index knew whose records Scan could not read: in a damaged
// region (counted in its Corruption's Lost), beyond the end of a truncated
// segment, or in a missing one. Entries failing their checksum are damage.
func (r *Reader) verifyIndex(dr *dirReader) {
	v := dr.view.Load()
	if v.ix == nil || v.rebuilt {
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
	)
	// Entries at or after the end of the last segment as OpenReader saw it
	// may be a live writer's or a crash's torn tail's: not judged here.
	var end location
	segs := map[uint32]*segmentFile{}
	for _, sf := range dr.order {
		segs[sf.num] = sf
		end = location{sf.num, sf.size}
	}
	n := v.ix.entries()
	data := v.ix.data[indexHeaderSize:]
	for id := uint64(0); id < n; id++ {
		e := data[id*indexEntrySize : (id+1)*indexEntrySize]
		if binary.LittleEndian.Uint64(e) == 0 && binary.LittleEndian.Uint64(e[8:]) == 0 {
			continue // most entries of a sparse index: skip them fast
		}
		seg, off, st := decodeEntry(id, e)
		switch st {
		case entryEmpty:
			continue
		case entryBad:
			if badEntries == 0 {
				firstBad = id
			}
			badEntries++
			continue
		}
		if _, ok := v.extra[id]; ok {
			continue // a later record, after the checkpoint
		}
		if !(location{seg, off}).before(end) {
			continue // written after OpenReader (a live writer), or in a torn tail
		}
		sf := segs[seg]
		switch {
		case sf == nil:
			missing[seg]++
		case off+recordHeaderSize > sf.size:
			beyond[seg]++
		default:
			rs := bySeg[sf.path]
			k := sort.Search(len(rs), func(k int) bool { return rs[k].Offset > off }) - 1
			if k >= 0 && off < rs[k].Offset+rs[k].Skipped {
				rs[k].Lost++
			} else {
				continue
			}
		}
		lost++
	}
	r.lost.Add(lost)
	if badEntries > 0 {
		r.noteDamage(fmt.Errorf("storage: index %s: %w: %d entries fail their CRC-32C, the first of URL id %d at offset %d (kspider check --repair rebuilds the index)",
			v.ix.path, ErrCorrupt, badEntries, firstBad, entryOffset(firstBad)))
	}
	for seg, k := range missing {
		r.noteDamage(fmt.Errorf("storage: %s: %w: %d pages lost: the index has them in segment %s, which is missing", dr.dir, ErrCorrupt, k, segmentName(seg)))
	}
	for seg, k := range beyond {
		sf := segs[seg]
		r.noteDamage(fmt.Errorf("storage: %s: %w: %d pages lost: the index has them beyond the end of the file (%d bytes); truncated?", sf.path, ErrCorrupt, k, sf.size))
	}
}
