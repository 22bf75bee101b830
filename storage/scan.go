package storage

import (
	"context"
	"fmt"
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
	r.reportMixed()
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
	dr.indexed = 0
	noteRegion := func(c *Corruption) {
		r.noteCorruption(c)
		dr.regions = append(dr.regions, c)
	}
	for k, sf := range dr.order {
		n := sf.num
		last := k == len(dr.order)-1
		note := func(c *Corruption) {
			c.TornTail = last && !c.Unreadable && c.Offset+c.Skipped == sf.size && !(location{n, c.Offset}).before(dr.ck)
			if c.TornTail && dr.live {
				r.note(fmt.Sprintf("%s: a record being written at offset %d by the running store, not read", sf.path, c.Offset))
				return
			}
			noteRegion(c)
		}
		var pos int64 // how far into sf the scan has counted (Progress)
		err := r.eachRecord(sf, 0, note, func(off int64, h recordHeader, rec []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			end := off + int64(h.length)
			r.scanned.Add(end - pos)
			pos = end
			cur, viaIndex, err := r.current(ctx, i, location{n, off}, h, recordURL(h, rec))
			if err != nil {
				return err
			}
			if !cur {
				r.superseded.Add(1)
				if viaIndex { // hidden by another directory's later fetch
					dr.indexed++
				}
				return nil
			}
			p, err := decodeRecord(h, rec, dec)
			if err != nil {
				// The CRC matched, so the writer stored a body its codec
				// cannot read back: report it like any damaged record
				// (its index entry then points at no page, a page lost),
				// never as a torn tail, which the next writer would cut
				// away: this record passes its checks, so none does.
				noteRegion(&Corruption{File: sf.path, Offset: off, Skipped: int64(h.length), Reason: err})
				return nil
			}
			if viaIndex {
				dr.indexed++
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
