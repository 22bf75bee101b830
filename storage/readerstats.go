package storage

// This file holds what a Reader counts and reports of the damage it meets.

// maxReportedErrors bounds ScanStats.Errors.
const maxReportedErrors = 100

// ScanStats counts what a Reader met, from OpenReader on.
type ScanStats struct {
	Records      int64 // records passed to Scan's fn
	Superseded   int64 // older records of re-crawled URL ids, not passed
	Skipped      int64 // damaged regions of segments skipped
	SkippedBytes int64 // bytes in them
	// Damage counts every damage found: skipped regions, damaged segment
	// headers, a damaged or missing index, truncated or missing segments.
	Damage int64
	// Lost counts pages the index knew of whose records are damaged or
	// gone (known after a Scan). An index found damaged counts through
	// its entries that pass their CRC; one missing or unreadable as a
	// whole knows of no page, so none is counted lost.
	Lost int64
	// Errors describes the first damage found (at most 100): *Corruption
	// for a damaged region, other errors naming the file and offset.
	Errors []error
	// Notes are things said that are not damage, such as an index of an
	// older format read from the segments instead.
	Notes []string
}

// Damaged reports whether the reader met any damage.
func (s ScanStats) Damaged() bool { return s.Damage > 0 }

func (r *Reader) noteCorruption(c *Corruption) {
	r.skipped.Add(1)
	r.skippedB.Add(c.Skipped)
	r.noteDamage(c)
}

func (r *Reader) noteDamage(err error) {
	r.damage.Add(1)
	r.errMu.Lock()
	if len(r.errs) < maxReportedErrors {
		r.errs = append(r.errs, err)
	}
	r.errMu.Unlock()
}

func (r *Reader) note(s string) {
	r.errMu.Lock()
	if len(r.notes) < maxReportedErrors {
		r.notes = append(r.notes, s)
	}
	r.errMu.Unlock()
}

// Stats returns what the reader has met so far.
func (r *Reader) Stats() ScanStats {
	r.errMu.Lock()
	errs := append([]error(nil), r.errs...)
	notes := append([]string(nil), r.notes...)
	r.errMu.Unlock()
	return ScanStats{
		Records:      r.records.Load(),
		Superseded:   r.superseded.Load(),
		Skipped:      r.skipped.Load(),
		SkippedBytes: r.skippedB.Load(),
		Damage:       r.damage.Load(),
		Lost:         r.lost.Load(),
		Errors:       errs,
		Notes:        notes,
	}
}

// Skipped returns how many damaged regions the reader has skipped.
func (r *Reader) Skipped() int64 { return r.skipped.Load() }
