package storage

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Store. Only Dirs is required.
type Config struct {
	// Dirs are the data directories, one per disk; each gets its own saver
	// goroutine. They are created if missing.
	Dirs []string
	// Codec compresses new records: "lzo" (the default), "s2", "zstd" or
	// "none".
	Codec string
	// Compressors is the number of compressor goroutines (default
	// GOMAXPROCS).
	Compressors int
	// SegmentSize rolls a segment file once it reaches this many bytes
	// (default 1 GiB).
	SegmentSize int64
	// A saver syncs after SyncEvery records (default 1024) or SyncInterval
	// (default 100ms) after the first unsynced record, whichever comes first.
	SyncEvery    int
	SyncInterval time.Duration
	// QueueLen is the capacity of each pool, incoming and compressed
	// (default 256 pages). Put blocks while the incoming pool is full.
	QueueLen int
	// MaxURLID bounds the URL ids Put accepts (default 2³²-1), and so the
	// size of the index files (12 bytes per id).
	MaxURLID uint64
	// OnDurable, if set, is called by each saver after a sync with the URL
	// ids it has just made durable. Savers call it concurrently; it must be
	// quick, must not keep the slice and must not call Put (the saver would
	// wait on itself).
	OnDurable func(urlIDs []uint64)
	// TreeID is the ID of the URL tree whose ids the pages are stored by
	// (urltree.Tree.ID), zero for none. A new store (or one from before
	// identities) takes it for its ID; a store with another ID is
	// refused with ErrForeign: the store of another data directory,
	// whose records name other URLs under the same ids.
	TreeID [16]byte
	// Logf, if set, receives what recovery repaired and which saver failed.
	Logf func(format string, args ...any)

	// failWrite, when set by tests, is consulted before every write and sync
	// in dir; an error it returns is treated as that I/O failing.
	failWrite func(dir string) error
}

const (
	defaultSegmentSize  = 1 << 30
	defaultSyncEvery    = 1024
	defaultSyncInterval = 100 * time.Millisecond
	defaultQueueLen     = 256
	defaultMaxURLID     = 1<<32 - 1
)

func (c *Config) setDefaults() {
	if c.Compressors <= 0 {
		c.Compressors = runtime.GOMAXPROCS(0)
	}
	if c.SegmentSize <= 0 {
		c.SegmentSize = defaultSegmentSize
	}
	if c.SyncEvery <= 0 {
		c.SyncEvery = defaultSyncEvery
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = defaultSyncInterval
	}
	if c.QueueLen <= 0 {
		c.QueueLen = defaultQueueLen
	}
	if c.MaxURLID == 0 {
		c.MaxURLID = defaultMaxURLID
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// ErrClosed is returned by Put after Close.
var ErrClosed = errors.New("storage: store is closed")

// Store writes pages through the pipeline described in the package doc.
// Put may be called from many goroutines.
type Store struct {
	cfg   Config
	id    storeID // in each directory's STORE file and each new segment's header
	codec Codec

	mu      sync.RWMutex // Put holds it shared; Close exclusively, to close incoming
	closed  bool
	closeMu sync.Mutex // serialises Close

	incoming   chan *Page
	compressed chan *record
	retry      chan *record // records a failed saver had not made durable

	compressorsDone sync.WaitGroup
	saversDone      sync.WaitGroup
	requeues        sync.WaitGroup // failed savers handing their records back
	savers          []*saver

	alive       atomic.Int32  // savers still working
	dead        chan struct{} // closed when no saver is left
	deadOnce    sync.Once
	outstanding atomic.Int64  // records accepted by Put, not yet durable or lost
	drained     chan struct{} // closed when, after Close, nothing is outstanding
	drainOnce   sync.Once
	inputDone   atomic.Bool // compressors have finished

	durable atomic.Uint64
	lost    atomic.Uint64
	// idleSync: savers sync as soon as their input is empty (SyncWhenIdle).
	idleSync atomic.Bool

	errMu    sync.Mutex
	firstErr error

	// free recycles records, not their buffers: a record's buffer is made
	// to its size when it is encoded and left to the garbage collector
	// once written. Kept for reuse (up to 16 MiB, then up to the most out
	// at once), the buffers counted as live heap, which the collector's
	// target doubles: peak RSS 1.05-1.2x and no less CPU per page on the
	// test web and the documentation crawls (bench crawl, alternated
	// rounds), each buffer grown to the largest record it ever held.
	free chan *record

	lend encoders // Encode's
}

// maxScratch bounds the compression buffer a compressor keeps between pages.
const maxScratch = 4 << 20

// record is one encoded record on its way from a compressor to a saver.
type record struct {
	buf   []byte
	urlID uint64
	seg   uint32 // where the saver put it
	off   int64
}

// Open recovers every directory (see recover.go) and starts the pipeline.
func Open(cfg Config) (*Store, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("storage: no data directory configured")
	}
	codec, err := ParseCodec(cfg.Codec)
	if err != nil {
		return nil, err
	}
	cfg.setDefaults()
	seen := map[string]bool{}
	for _, d := range cfg.Dirs {
		if seen[d] {
			return nil, fmt.Errorf("storage: data directory %s listed twice", d)
		}
		seen[d] = true
	}
	id, from, err := storeIDOf(cfg.Dirs, nil)
	if err != nil {
		return nil, err
	}
	switch tree := storeID(cfg.TreeID); {
	case tree == (storeID{}) && id == (storeID{}):
		id = newStoreID()
	case tree == (storeID{}):
	case id == (storeID{}):
		id = tree
	case id != tree:
		return nil, fmt.Errorf("storage: %w page store: %s names store %v, but the store is opened for URL tree %v: the store of another data directory (storage directories swapped?); put back this node's own, or give it empty ones", ErrForeign, from, id, tree)
	}
	s := &Store{
		cfg:        cfg,
		id:         id,
		codec:      codec,
		incoming:   make(chan *Page, cfg.QueueLen),
		compressed: make(chan *record, cfg.QueueLen),
		retry:      make(chan *record),
		lend:       encoders{codec: codec, spare: make(chan *encoder, cfg.Compressors)},
		dead:       make(chan struct{}),
		drained:    make(chan struct{}),
	}
	// Every record in flight: both pools, one per compressor, and per saver
	// the pending and the in-flight sync batches (bounded: a huge SyncEvery
	// must not make a huge channel).
	s.free = make(chan *record, min(2*cfg.QueueLen+cfg.Compressors+len(cfg.Dirs)*2*cfg.SyncEvery, 1<<14))
	for _, d := range cfg.Dirs {
		sv, err := openSaver(s, d)
		if err != nil {
			for _, o := range s.savers {
				o.closeFiles()
			}
			return nil, err
		}
		s.savers = append(s.savers, sv)
	}
	encoders := make([]*encoder, cfg.Compressors)
	for i := range encoders {
		if encoders[i], err = newEncoder(codec); err != nil {
			for _, o := range s.savers {
				o.closeFiles()
			}
			return nil, err
		}
	}
	s.alive.Store(int32(len(s.savers)))
	for _, sv := range s.savers {
		s.saversDone.Add(1)
		go sv.run()
	}
	for _, enc := range encoders {
		s.compressorsDone.Add(1)
		go s.compress(enc)
	}
	go func() {
		s.compressorsDone.Wait()
		close(s.compressed)
		s.inputDone.Store(true)
		s.checkDrained()
	}()
	return s, nil
}

// Put hands p to the pipeline. It blocks while the incoming pool is full
// (back-pressure) and fails only when ctx ends, the store is closed, or
// every saver has failed. The pipeline reads p later: the caller must not
// modify it after Put. Put returning nil does not make p durable; see
// Config.OnDurable and Durable.
func (s *Store) Put(ctx context.Context, p *Page) error {
	if err := s.checkPut(p); err != nil {
		return err
	}
	return enqueue(s, ctx, s.incoming, p)
}

// enqueue sends v, a page (Put) or a record (PutEncoded), to its pool,
// counted outstanding until it is durable or lost.
func enqueue[T any](s *Store, ctx context.Context, pool chan<- T, v T) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case <-s.dead:
		return s.deadError()
	default:
	}
	s.outstanding.Add(1)
	select {
	case pool <- v:
		return nil
	case <-ctx.Done():
		s.outstanding.Add(-1)
		return ctx.Err()
	case <-s.dead:
		s.outstanding.Add(-1)
		return s.deadError()
	}
}

// checkPut checks a page Put or Encode is given.
func (s *Store) checkPut(p *Page) error {
	if err := checkPage(p); err != nil {
		return err
	}
	if p.URLID > s.cfg.MaxURLID {
		return fmt.Errorf("storage: page %d (%s): URL id above the configured maximum %d", p.URLID, p.URL, s.cfg.MaxURLID)
	}
	return nil
}

func (s *Store) deadError() error {
	return fmt.Errorf("storage: every saver has stopped: %w", s.err())
}

// Durable returns how many records have been synced to disk so far.
func (s *Store) Durable() uint64 { return s.durable.Load() }

// SyncWhenIdle switches the savers between waiting SyncInterval (or
// SyncEvery records) before a sync, which batches many pages into one
// fdatasync while pages keep coming, and syncing as soon as their input is
// empty. The node switches it on while it fetches nothing, so that the
// last pages of a crawl (or of a burst) are durable at once instead of
// after the interval.
func (s *Store) SyncWhenIdle(on bool) {
	if s.idleSync.Swap(on) == on || !on {
		return
	}
	for _, sv := range s.savers {
		select {
		case sv.wake <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting pages, waits until every accepted page is durable
// (or lost because every saver failed), syncs and closes the files. It
// returns the first saver error, or an error counting lost pages.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.err()
	}
	s.closed = true
	close(s.incoming)
	s.mu.Unlock()
	s.lend.closeAll() // Encode, under mu, has given every encoder back

	s.saversDone.Wait()
	// If every saver failed, what is still in the pipeline is lost; count it.
	s.compressorsDone.Wait()
	for r := range s.compressed {
		s.recordLost(r)
	}
	s.requeues.Wait()
	if n := s.lost.Load(); n > 0 {
		s.setErr(fmt.Errorf("storage: %d records lost because every saver stopped", n))
	}
	return s.err()
}

// compress turns pages into records until the incoming pool is closed.
func (s *Store) compress(enc *encoder) {
	defer s.compressorsDone.Done()
	defer enc.close()
	for p := range s.incoming {
		r := s.newRecord()
		s.encodeRecord(enc, p, r)
		select {
		case s.compressed <- r:
		case <-s.dead:
			s.recordLost(r)
		}
	}
}

// newRecord is a record from the free pool, or a new one.
func (s *Store) newRecord() *record {
	select {
	case r := <-s.free:
		return r
	default:
		return new(record)
	}
}

// encodeRecord makes r p's record; p is not read afterwards.
func (s *Store) encodeRecord(enc *encoder, p *Page, r *record) {
	r.urlID = p.URLID
	// Compress into the compressor's scratch buffer, which has room
	// for the worst case (more than the page), and keep only the
	// record's bytes: a record buffer sized for the worst case held
	// three to four times what it carries while it waited for its
	// sync, and allocating and zeroing such buffers was 9 % of a
	// crawl's CPU.
	dst := enc.scratch[:0]
	if enc.codec == CodecNone { // the record's size is known: no scratch
		dst = make([]byte, 0, recordHeaderSize+16+len(p.URL)+len(p.Header)+len(p.Body))
	}
	rec := appendRecordPrefix(dst, p, enc.codec)
	prefix := len(rec)
	rec = enc.appendEncoded(rec, p.Body)
	if len(rec)-prefix >= len(p.Body) && enc.codec != CodecNone {
		// Incompressible (an image, an archive): store it as it is,
		// which also keeps the record within maxRecordSize.
		rec[5] = byte(CodecNone)
		rec = append(rec[:prefix], p.Body...)
	}
	finishRecord(rec, len(rec)-prefix)
	if enc.codec == CodecNone {
		r.buf = rec
	} else {
		r.buf = append([]byte(nil), rec...)
		enc.scratch = rec[:0]
		if cap(enc.scratch) > maxScratch {
			enc.scratch = nil // do not keep the odd huge page's buffer around
		}
	}
}

// recycleBuf drops the buffer of a record written but not yet durable: the
// saver will not write it again (see flush).
func (s *Store) recycleBuf(r *record) { r.buf = nil }

// recordDone accounts for a record that is durable or lost.
func (s *Store) recordDone(r *record) {
	s.toFree(r)
	if s.outstanding.Add(-1) == 0 {
		s.checkDrained()
	}
}

// toFree offers r, without its buffer, to the free pool for reuse.
func (s *Store) toFree(r *record) {
	r.buf = nil
	select {
	case s.free <- r:
	default:
	}
}

func (s *Store) recordLost(r *record) {
	s.lost.Add(1)
	s.recordDone(r)
}

// checkDrained closes drained once the input is finished and no record is
// outstanding, which lets idle savers exit.
func (s *Store) checkDrained() {
	if s.inputDone.Load() && s.outstanding.Load() == 0 {
		s.drainOnce.Do(func() { close(s.drained) })
	}
}

func (s *Store) setErr(err error) {
	s.errMu.Lock()
	if s.firstErr == nil {
		s.firstErr = err
	}
	s.errMu.Unlock()
}

func (s *Store) err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.firstErr
}
