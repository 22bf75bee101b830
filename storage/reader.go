package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Reader reads a store, also one a Store is writing to: Scan then sees the
// records as of OpenReader, and Get also those the writer has indexed
// since. Get may be called from many goroutines; Scan runs one goroutine
// per directory.
type Reader struct {
	dirs []*dirReader
	// store is the ID of the store the directories belong to (zero: none
	// says, a store from before identities): a segment of another is
	// damage, none of its records read.
	store     storeID
	storeFrom string // the file that names store

	decoders sync.Pool // *decoder, for Get
	buffers  sync.Pool // *[]byte, for Get's reads

	records    atomic.Int64
	scanned    atomic.Int64 // segment bytes a Scan has passed (Progress)
	superseded atomic.Int64
	skipped    atomic.Int64
	skippedB   atomic.Int64
	damage     atomic.Int64
	lost       atomic.Int64
	errMu      sync.Mutex // guards errs, notes and mixed
	errs       []error
	notes      []string
	mixed      map[[2]string]*mixedURLs // during a Scan (noteMixed)

	// rereadWait is the pause before an index entry that failed its
	// check is read again (find): time.Sleep of entryRereadWait; tests
	// replace it to finish a writer's put in the pause.
	rereadWait func()
}

// dirReader is one data directory as the reader sees it.
type dirReader struct {
	dir   string
	mu    sync.Mutex // guards segs, which Get may extend
	segs  map[uint32]*segmentFile
	order []*segmentFile // the segments at OpenReader, ascending: what Scan reads
	ix    *index         // nil when url.idx is missing or unusable; closed by close
	ck    location       // the index checkpoint at OpenReader
	live  bool           // a Store was writing the directory at OpenReader
	store storeID        // the Reader's: a segment Get opens is checked against it

	// view is how URL ids are looked up; a damaged index is replaced by a
	// view rebuilt from the segments (rebuild).
	view      atomic.Pointer[dirView]
	rebuildMu sync.Mutex
	distrust  atomic.Bool // the index proved damaged: it vouches for no record

	regions []*Corruption // damaged regions Scan met, for verifyIndex
	// indexed counts the records a Scan found where the index points (not
	// through extra), for verifyIndex: each intact entry points at one.
	indexed int64
}

// dirView maps URL ids to records: through the index, and extra for the
// records it does not cover (those after its checkpoint, or all of them
// when ix is nil). A view is never modified once published.
type dirView struct {
	ix      *index
	extra   map[uint64]location
	rebuilt bool // built from the segments after the index proved damaged
}

type segmentFile struct {
	f    *os.File
	ra   io.ReaderAt // what reads go through: f (a test injects read errors)
	path string
	num  uint32
	size int64       // at OpenReader
	bad  atomic.Bool // torn at creation: holds no records
	// vouch: see segmentReader (nil: none answers).
	vouch func(id uint64, off int64) bool
}

type location struct {
	seg uint32
	off int64
}

func (l location) before(o location) bool {
	return l.seg < o.seg || l.seg == o.seg && l.off < o.off
}

// ErrNoStore is returned by OpenReader for a directory that holds no store.
var ErrNoStore = errors.New("no page store")

// OpenReader opens the data directories read-only. It indexes in memory the
// records a crashed writer left after the index checkpoint, and all records
// of a directory whose index is missing or damaged. A directory without
// segments and index is an error wrapping ErrNoStore.
func OpenReader(dirs []string) (*Reader, error) {
	return OpenReaderContext(context.Background(), dirs, nil)
}

// OpenReaderContext is OpenReader that gives up reading the segments,
// returning an error wrapping ctx's, when ctx ends, and counts in progress (if not nil) the
// segment bytes it reads. Without a usable index a directory's segments
// are read whole, as long as a Scan of them takes (hours for terabytes):
// an interactive tool shows that and lets Ctrl-C end it.
func OpenReaderContext(ctx context.Context, dirs []string, progress *OpenProgress) (*Reader, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no data directory given")
	}
	if progress == nil {
		progress = new(OpenProgress)
	}
	r := &Reader{rereadWait: func() { time.Sleep(entryRereadWait) }}
	r.decoders.New = func() any { return new(decoder) }
	r.buffers.New = func() any { return new([]byte) }
	var err error
	if r.store, r.storeFrom, err = storeIDOf(dirs, r.noteDamage); err != nil {
		return nil, err
	}
	// Every directory is opened before any is read, so that progress
	// has its total from the start.
	noIndex := make([]func(records int), len(dirs))
	for i, d := range dirs {
		dr, why, err := r.openDir(d)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.dirs = append(r.dirs, dr)
		noIndex[i] = why
		for _, sf := range dr.order {
			if start := dr.unindexedFrom(sf); start >= 0 {
				progress.total.Add(sf.size - start)
			}
		}
	}
	for i, dr := range r.dirs {
		extra, err := r.indexUnindexed(ctx, dr, progress)
		if err != nil {
			r.Close()
			return nil, err
		}
		dr.view.Store(&dirView{ix: dr.ix, extra: extra})
		if noIndex[i] != nil {
			noIndex[i](len(extra))
		}
	}
	return r, nil
}

// OpenProgress counts how far an OpenReaderContext has got: the segment
// bytes it has read of those it reads. It may be read from any goroutine
// while the open runs.
type OpenProgress struct {
	read, total atomic.Int64
}

// Progress returns the segment bytes read so far and those to read in
// all (zero when the index covers every record).
func (p *OpenProgress) Progress() (read, total int64) { return p.read.Load(), p.total.Load() }

// unindexedFrom returns where the records of segment sf that dr's index
// does not cover begin (0: all of them), or -1 when it covers them all.
func (dr *dirReader) unindexedFrom(sf *segmentFile) int64 {
	switch {
	case dr.ix == nil:
		return 0
	case sf.num < dr.ck.seg:
		return -1
	case sf.num == dr.ck.seg && dr.ck.off <= sf.size:
		return dr.ck.off
	}
	return 0
}

// indexUnindexed indexes in memory the records of dr its index does not
// cover (unindexedFrom), counting the bytes it reads in progress, until
// ctx ends.
func (r *Reader) indexUnindexed(ctx context.Context, dr *dirReader, progress *OpenProgress) (map[uint64]location, error) {
	done := ctx.Done()
	extra := map[uint64]location{}
	for _, sf := range dr.order {
		start := dr.unindexedFrom(sf)
		if start < 0 {
			continue
		}
		n, pos := sf.num, start
		err := r.eachRecord(sf, start, nil, func(off int64, h recordHeader, _ []byte) error {
			select {
			case <-done:
				return fmt.Errorf("storage: opening %s: indexing the records of %s: %w", dr.dir, sf.path, ctx.Err())
			default:
			}
			extra[h.urlID] = location{n, off}
			end := off + int64(h.length)
			progress.read.Add(end - pos)
			pos = end
			return nil
		})
		if err != nil {
			return nil, err
		}
		progress.read.Add(sf.size - pos) // damage, or a tail cut meanwhile
	}
	return extra, nil
}

// StoreID returns the ID of the store the directories belong to and the
// file that names it; zero and "" when none does (a store from before
// identities). A caller holds it to the URL tree whose ids the pages are
// stored by, as Open does with Config.TreeID: a Reader reads any store.
func (r *Reader) StoreID() (id [16]byte, from string) { return r.store, r.storeFrom }

// openDir opens dir's index and segments, noting the damage it finds
// there. The records the index does not cover are read afterwards
// (indexUnindexed); the function it returns, if not nil, says then why
// all of them were, given how many.
func (r *Reader) openDir(dir string) (*dirReader, func(records int), error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("storage: %s is not a directory", dir)
	}
	dr := &dirReader{dir: dir, segs: map[uint32]*segmentFile{}, live: locked(dir), store: r.store}
	// The index first: a live writer only moves its checkpoint forward
	// over data already written, so the segments listed and measured
	// afterwards hold everything the checkpoint promises.
	ix, ixErr := openIndex(filepath.Join(dir, indexName), false)
	if ixErr == nil {
		dr.ix = ix
		seg, off := ix.checkpoint()
		dr.ck = location{seg, off}
	}
	nums, odd, err := listSegmentNames(dir)
	if err != nil {
		dr.close()
		return nil, nil, err
	}
	if err := r.openSegments(dr, nums); err != nil {
		dr.close()
		return nil, nil, err
	}
	var noIndex func(records int) // says why the segments are read instead, once read
	switch err := ixErr; {
	case err == nil && ix.torn != nil && dr.live:
		r.note(fmt.Sprintf("%s: a header slot being written by the running store (%v), the other used", ix.path, ix.torn.Err))
	case err == nil && ix.torn != nil:
		r.noteDamage(ix.torn)
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && len(nums) == 0:
		dr.close()
		return nil, nil, fmt.Errorf("storage: %s: %w: no segment files (%s) and no index (%s)", dir, ErrNoStore, "*"+segmentSuffix, indexName)
	case errors.Is(err, errOldIndex):
		noIndex = func(n int) { r.note(fmt.Sprintf("%v; reading the segments instead (%s)", err, inMemory(n))) }
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrCorrupt):
		noIndex = func(n int) { r.noteDamage(fmt.Errorf("%w; reading the segments instead (%s)", err, inMemory(n))) }
	default:
		dr.close()
		return nil, nil, err
	}
	r.checkCheckpoint(dr)
	r.noteStrays(dr, nums, odd)
	return dr, noIndex, nil
}

// inMemoryBytesPerRecord is about what a record indexed in memory (a
// dirView's extra) costs: a Go map entry of a URL id and a location.
const inMemoryBytesPerRecord = 50

// inMemory says what n records indexed in memory cost. Without a usable
// url.idx a Reader indexes every record so, with no bound: a store of 100
// million pages takes about 5 GB until kspider check --repair rewrites the
// index on disk (its check, a Reader too, takes as much once).
func inMemory(n int) string {
	return fmt.Sprintf("%d records indexed in memory, about %d MB", n, (n*inMemoryBytesPerRecord+1<<20-1)>>20)
}

// locked reports whether a Store holds dir's lock: is writing it now. It
// looks the LOCK file up in /proc/locks rather than trying the lock, which
// would, for a moment, make a Store starting then fail to take it.
func locked(dir string) bool {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "LOCK"), &st); err != nil {
		return false
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	// Lines like "1: FLOCK  ADVISORY  WRITE 8375 fd:01:1048602 0 EOF":
	// device major:minor in hex, then the inode.
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			return true
		}
	}
	return false
}

// openSegments opens the segment files nums of dr and checks their
// headers, noting damage: a segment missing from the sequence, a torn or
// damaged header. A segment of an unsupported version is an error.
func (r *Reader) openSegments(dr *dirReader, nums []uint32) error {
	for i, n := range nums {
		want := uint32(1)
		if i > 0 {
			want = nums[i-1] + 1
		}
		if n != want {
			r.noteDamage(fmt.Errorf("storage: %s: %w: %s", dr.dir, ErrCorrupt, gapAbsent(dr.dir, want, n-1)))
		}
		path := segmentPath(dr.dir, n)
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		sf := &segmentFile{f: f, ra: f, path: path, num: n}
		if dr.ix != nil {
			sf.vouch = indexVouch(dr.ix, n, &dr.distrust)
		}
		dr.segs[n] = sf
		dr.order = append(dr.order, sf)
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		sf.size = st.Size()
		_, hdr, err := newSegmentReader(sf.ra, path, n, sf.size, true, r.store)
		var c *Corruption
		switch {
		case errors.As(err, &c) && i == len(nums)-1 && !errors.Is(c, ErrForeign):
			// A writer died creating it; its recovery will rewrite it.
			// (If the index knew records in it, checkCheckpoint and
			// verifyIndex report them lost.)
			sf.bad.Store(true)
		case errors.As(err, &c):
			sf.bad.Store(true)
			r.noteCorruption(c)
		case err != nil:
			return err
		case hdr != nil:
			r.noteDamage(hdr) // the records behind it are still read
		}
	}
	return nil
}

// eachRecord calls fn for every valid record of segment sf from offset start
// on (0: from the first), and note (if not nil) for every damaged region. rec is valid only
// during the call.
func (r *Reader) eachRecord(sf *segmentFile, start int64, note func(*Corruption), fn func(off int64, h recordHeader, rec []byte) error) error {
	if sf.bad.Load() {
		return nil
	}
	sr, _, err := newSegmentReader(sf.ra, sf.path, sf.num, sf.size, true, r.store)
	var c *Corruption
	if errors.As(err, &c) && note != nil {
		note(c) // cut inside its header since openSegments measured it
		return nil
	}
	if err != nil {
		return err // openSegments met it first
	}
	sr.off = min(max(start, sr.first), sf.size)
	sr.vouch = sf.vouch
	for {
		off, h, rec, err := sr.next()
		if err == io.EOF {
			if sr.size < sf.size && note != nil {
				// Cut while being read: what was beyond is gone.
				note(&Corruption{File: sf.path, Offset: sr.size, Skipped: sf.size - sr.size,
					Reason: fmt.Errorf("%w: the file was cut here while being read (%d bytes when opened)", ErrCorrupt, sf.size)})
			}
			return nil
		}
		var c *Corruption
		if errors.As(err, &c) {
			if note != nil {
				note(c)
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
