package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// saver owns one data directory: it appends records to the current segment
// sequentially, syncs them by the configured policy and only then points
// the index at them.
//
// The fdatasync runs in its own goroutine while the saver goes on writing
// the next records into the same file, so a slow sync does not stall the
// disk's sequential stream; at most one sync is in flight.
type saver struct {
	s   *Store
	dir string
	ix  *index

	lock   *os.File // flocked LOCK file
	seg    *os.File
	segNum uint32
	segOff int64 // end of the records handed to the file or the buffer
	synced int64 // end of the records known durable in seg

	unwritten    []*record // records not yet written to seg
	unwrittenN   int       // their bytes
	iov          [][]byte  // scratch for writev
	pending      []*record // written or buffered, no sync started for them
	pendingBytes int
	spare        []*record // a drained batch slice, for reuse
	inflight     *syncBatch
	syncDone     chan *syncBatch
	ids          []uint64 // scratch for OnDurable

	sinceCheckpoint int64 // bytes synced since the index checkpoint
	timer           *time.Timer
	timerC          <-chan time.Time // timer.C while records wait for a sync
	wake            chan struct{}    // Store.SyncWhenIdle switched on

	stats saverStats // read by Store.Disks (stats.go) from other goroutines
}

// syncBatch is one fdatasync in flight and the records it makes durable.
type syncBatch struct {
	recs []*record
	end  int64 // segment offset the sync covers
	err  error
}

const (
	// writeBufferSize is how many record bytes a saver gathers before one
	// writev(2) hands them to the kernel (iovMax records at most). Gathered
	// rather than copied into a buffer: the records stay in memory until
	// their sync anyway, and the copy was up to 2.5 MB of a crawl's heap.
	// A store's only saver hands each record's buffer back once written
	// (flush), so the records gathered are most of what the pipeline holds:
	// 256 KiB rather than 1 MiB is four writev calls a megabyte.
	writeBufferSize = 256 << 10
	iovMax          = 1024     // IOV_MAX on Linux
	pendingMaxBytes = 32 << 20 // sync early rather than hold more than this
	checkpointBytes = 64 << 20 // how much recovery may have to re-read
)

func (sv *saver) run() {
	s := sv.s
	defer s.saversDone.Done()
	in := s.compressed
	sv.syncDone = make(chan *syncBatch, 1)
	sv.timer = time.NewTimer(time.Hour)
	sv.timer.Stop()
	for {
		var syncDone chan *syncBatch
		if sv.inflight != nil {
			syncDone = sv.syncDone
		}
		var r *record
		var ok bool
		var err error
		select {
		case r = <-s.retry:
		case r, ok = <-in:
			if !ok {
				in = nil
				continue
			}
		case b := <-syncDone:
			err = sv.applySync(b)
		default:
			// Idle: hand buffered records to the kernel, and once the input
			// has ended, make everything durable without waiting.
			err = sv.flush()
			// Once the input has ended, or while the store's user has no
			// more pages coming (SyncWhenIdle), make everything durable
			// without waiting. With a sync already in flight, the next one
			// starts when it completes (below), not by waiting here.
			eager := in == nil || sv.s.idleSync.Load() && sv.inflight == nil
			if err == nil && eager && len(sv.pending) > 0 {
				err = sv.startSync()
				if sv.inflight != nil {
					syncDone = sv.syncDone
				}
			}
			if err != nil {
				break
			}
			select {
			case r = <-s.retry:
			case r, ok = <-in:
				if !ok {
					in = nil
					continue
				}
			case b := <-syncDone:
				err = sv.applySync(b)
			case <-sv.timerC:
				err = sv.startSync()
			case <-sv.wake:
			case <-s.drained:
				sv.finish()
				return
			}
		}
		if err == nil && r != nil {
			err = sv.write(r)
			if err == nil && len(sv.pending) == 1 {
				sv.timer.Reset(s.cfg.SyncInterval)
				sv.timerC = sv.timer.C
			}
			if err == nil && (len(sv.pending) >= s.cfg.SyncEvery || sv.pendingBytes >= pendingMaxBytes) {
				err = sv.startSync()
			}
		}
		if err != nil {
			sv.fail(err)
			return
		}
	}
}

// write appends r to the current segment (gathered for writev), rolling the
// segment first when r would take it past the configured size.
func (sv *saver) write(r *record) error {
	sv.pending = append(sv.pending, r)
	sv.pendingBytes += len(r.buf)
	if err := sv.ix.reserve(r.urlID); err != nil {
		return err
	}
	if sv.segOff > segmentHeaderSize && sv.segOff+int64(len(r.buf)) > sv.s.cfg.SegmentSize {
		if err := sv.roll(); err != nil {
			return err
		}
	}
	r.seg, r.off = sv.segNum, sv.segOff
	sv.segOff += int64(len(r.buf))
	if sv.unwrittenN+len(r.buf) > writeBufferSize || len(sv.unwritten) == iovMax {
		if err := sv.flush(); err != nil {
			return err
		}
	}
	sv.unwritten = append(sv.unwritten, r)
	sv.unwrittenN += len(r.buf)
	return nil
}

// flush writes the gathered records to the segment. The only saver of a
// store then hands their buffers back at once, long before their sync:
// if this saver fails there is no other to write them again.
func (sv *saver) flush() error {
	if len(sv.unwritten) == 0 {
		return nil
	}
	for _, r := range sv.unwritten {
		sv.iov = append(sv.iov, r.buf)
	}
	err := sv.writeFile(sv.iov)
	if err == nil && len(sv.s.savers) == 1 {
		for _, r := range sv.unwritten {
			sv.s.recycleBuf(r)
		}
	}
	clear(sv.iov) // the records are not these slices' to keep alive
	clear(sv.unwritten)
	sv.iov, sv.unwritten, sv.unwrittenN = sv.iov[:0], sv.unwritten[:0], 0
	return err
}

// writeFile writes bufs, in order, at the segment's end with writev(2),
// again after a short write until every byte is written.
func (sv *saver) writeFile(bufs [][]byte) error {
	if h := sv.s.cfg.failWrite; h != nil {
		if err := h(sv.dir); err != nil {
			return fmt.Errorf("writing %s: %w", sv.seg.Name(), err)
		}
	}
	fd := int(sv.seg.Fd())
	for {
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
		if len(bufs) == 0 {
			return nil
		}
		n, err := unix.Writev(fd, bufs)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", sv.seg.Name(), err)
		}
		if n == 0 {
			return fmt.Errorf("writing %s: %w", sv.seg.Name(), io.ErrShortWrite)
		}
		for n > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
}

// startSync writes out the gathered records and starts an fdatasync covering the
// pending records, after the one in flight (if any) has finished.
func (sv *saver) startSync() error {
	sv.timer.Stop()
	sv.timerC = nil
	if err := sv.flush(); err != nil {
		return err
	}
	if len(sv.pending) == 0 {
		return nil
	}
	if sv.inflight != nil {
		if err := sv.applySync(<-sv.syncDone); err != nil {
			return err
		}
	}
	if h := sv.s.cfg.failWrite; h != nil {
		if err := h(sv.dir); err != nil {
			return fmt.Errorf("syncing %s: %w", sv.seg.Name(), err)
		}
	}
	b := &syncBatch{recs: sv.pending, end: sv.segOff}
	sv.pending, sv.spare, sv.pendingBytes = sv.spare[:0], nil, 0
	sv.inflight = b
	fd := int(sv.seg.Fd())
	go func() {
		b.err = unix.Fdatasync(fd)
		sv.syncDone <- b
	}()
	return nil
}

// applySync completes the sync b: its records are durable now, so the
// index may point at them and OnDurable hears of them. A failed sync puts
// its records back in front of the pending ones.
func (sv *saver) applySync(b *syncBatch) error {
	sv.inflight = nil
	if b.err != nil {
		sv.pending = append(b.recs, sv.pending...)
		return fmt.Errorf("syncing %s: %w", sv.seg.Name(), b.err)
	}
	sv.sinceCheckpoint += b.end - sv.synced
	sv.stats.bytes.Add(uint64(b.end - sv.synced))
	sv.stats.records.Add(uint64(len(b.recs)))
	sv.synced = b.end
	sv.ids = sv.ids[:0]
	var ixErr error // the records are durable all the same: reported so below
	for _, r := range b.recs {
		// The index has room: write reserved it before the record went out.
		// It fails only if url.idx was truncated under the mapping; the
		// checkpoint then stays before these records, re-indexed at open.
		if err := sv.ix.set(r.urlID, r.seg, r.off); err != nil && ixErr == nil {
			ixErr = err
		}
		sv.ids = append(sv.ids, r.urlID)
	}
	if f := sv.s.cfg.OnDurable; f != nil {
		f(sv.ids)
	}
	sv.s.durable.Add(uint64(len(b.recs)))
	for i, r := range b.recs {
		b.recs[i] = nil
		sv.s.recordDone(r)
	}
	sv.spare = b.recs[:0]
	if ixErr != nil {
		return ixErr
	}
	if sv.sinceCheckpoint >= checkpointBytes {
		if err := sv.ix.setCheckpoint(sv.segNum, sv.synced); err != nil {
			return err
		}
		sv.sinceCheckpoint = 0
	}
	return nil
}

// sync makes every pending record durable before it returns.
func (sv *saver) sync() error {
	if err := sv.startSync(); err != nil {
		return err
	}
	if sv.inflight != nil {
		return sv.applySync(<-sv.syncDone)
	}
	return nil
}

// roll syncs and closes the current segment and starts the next one.
func (sv *saver) roll() error {
	last := sv.pending[len(sv.pending)-1] // the record that does not fit
	sv.pending = sv.pending[:len(sv.pending)-1]
	err := sv.sync()
	sv.pending = append(sv.pending, last)
	if err != nil {
		return err
	}
	if err := sv.ix.setCheckpoint(sv.segNum, sv.synced); err != nil {
		return err
	}
	sv.sinceCheckpoint = 0
	if err := sv.seg.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", sv.seg.Name(), err)
	}
	sv.seg = nil
	return sv.createSegment(sv.segNum + 1)
}

// createSegment starts segment n, durably: header written and synced, and
// the directory entry synced.
func (sv *saver) createSegment(n uint32) error {
	if n == 0 {
		// The number after 4294967295 wrapped around: a segment 0 is
		// never read, so the pages written into it would be lost.
		return fmt.Errorf("storage: %s: no segment number left after %s (a stray file?)", sv.dir, segmentName(n-1))
	}
	path := segmentPath(sv.dir, n)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return segmentInTheWay(sv.dir, path, n)
	}
	if err != nil {
		return err
	}
	if h := sv.s.cfg.failWrite; h != nil {
		if err = h(sv.dir); err != nil {
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err == nil {
		_, err = f.Write(encodeSegmentHeader(n, sv.s.id))
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(sv.dir)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("creating segment %s: %w", path, err)
	}
	sv.seg, sv.segNum = f, n
	sv.segOff, sv.synced = segmentHeaderSize, segmentHeaderSize
	return nil
}

// segmentInTheWay is the error of a saver that cannot create segment n
// at path because something stands under its name: one the writer's open
// did not take for a segment (a directory, a FIFO, a link), or a file put
// there since. The saver overwrites nothing it did not write, so it
// stops, and the directory takes no more pages until it is moved out.
func segmentInTheWay(dir, path string, n uint32) error {
	what := "something"
	if fi, err := os.Lstat(path); err == nil {
		what = fileKind(fi.Mode())
	}
	return fmt.Errorf("creating segment %s, the next after %s: %s stands under its name, not a segment this store wrote (a file put there since the store was opened, or one it does not take for a segment): it is left as it is, and %s takes no more pages; move it out of the directory and start again",
		path, segmentName(n-1), what, dir)
}

// finish makes everything durable and closes the directory's files.
func (sv *saver) finish() {
	err := sv.sync()
	if err == nil {
		err = sv.ix.setCheckpoint(sv.segNum, sv.synced)
	}
	if err != nil {
		sv.fail(err)
		return
	}
	if err := sv.closeFiles(); err != nil {
		sv.s.setErr(fmt.Errorf("storage: closing %s: %w", sv.dir, err))
	}
}

// fail stops this saver after an I/O error. The records it had not made
// durable go back to the other savers; what it had synced stays as it is.
func (sv *saver) fail(err error) {
	s := sv.s
	if sv.inflight != nil {
		// A sync that succeeds still makes its records durable.
		sv.applySync(<-sv.syncDone)
	}
	err = fmt.Errorf("storage: saver for %s stopped: %w", sv.dir, err)
	sv.stats.failed.Store(true)
	s.setErr(err)
	s.cfg.Logf("%v", err)
	if sv.seg != nil {
		// Best effort: drop the unsynced tail, which recovery would
		// otherwise have to skip as a torn record.
		sv.seg.Truncate(sv.synced)
	}
	sv.closeFiles()
	pending := sv.pending
	sv.pending = nil
	if s.alive.Add(-1) == 0 {
		s.deadOnce.Do(func() { close(s.dead) })
		for _, r := range pending {
			s.recordLost(r)
		}
		return
	}
	s.requeues.Add(1)
	go func() {
		defer s.requeues.Done()
		for _, r := range pending {
			select {
			case s.retry <- r:
			case <-s.dead:
				s.recordLost(r)
			}
		}
	}()
}

func (sv *saver) closeFiles() error {
	var err error
	if sv.seg != nil {
		err = sv.seg.Close()
		sv.seg = nil
	}
	if sv.ix != nil {
		if cerr := sv.ix.close(); err == nil {
			err = cerr
		}
		sv.ix = nil
	}
	if sv.lock != nil {
		sv.lock.Close() // closing releases the flock
		sv.lock = nil
	}
	return err
}
