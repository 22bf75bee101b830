package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Spill file (SpillDir/spill-<self>-<peer>), append-only:
//
//	header: magic "kspl" | version u16 = 2 | self u16 | peer u16 |
//	        reserved u16 | CRC-32C u32 of the 12 bytes before it
//	record: length u32 | CRC-32C u32 of the record's offset in the
//	        file (u64) followed by the payload | payload
//	payload: 1 | uvarint tag | URL bytes        (an item)
//	         2 | offset u64                     (a consumed mark)
//
// all big-endian. The offset in the checksum binds a record to its place:
// whole records of one length swapped (a misdirected write, a block
// moved) fail it and are skipped as damage, where version 1, whose CRC
// covered the payload alone, read them as intact, and one swapped across
// the last mark had an acknowledged item delivered again and an
// unacknowledged one lost, unseen. A version 1 file is still read (and
// appended to) as version 1, as safe as it ever was; it becomes version 2
// when it is truncated back to its header (all acknowledged) or rewritten
// (spillcompact.go). A file of a later version (its header whole) is
// refused, naming the versions: the endpoint does not start. (A build
// before version 2 moves a version 2 file aside as a bad header, to
// <file>.bad-0, its items not delivered: going back to one loses them.) Items are appended while the peer's memory queue is full
// and read back in order when the window has room. A mark says every item
// before that offset was acknowledged; on open the file is read from the
// last mark. A mark is taken only if it names a place from the last mark
// taken up to itself where a record starts (one that verifies, or the
// start of a damaged stretch) or one inside a damaged stretch (then its
// end); else it is damage, only its record skipped. When everything is consumed the file is truncated back to its
// header; a large consumed part is cut off under traffic too, by
// rewriting the file (spillcompact.go). A record that fails its checksum, length or type is reported
// with the file and offset and skipped: the scan resynchronises on the
// next record that verifies (spillscan.go), so only the damaged bytes are
// lost, and so does the reader for damage done after the open; the counts
// are in PeerStats. A damaged or torn stretch that runs
// to the end of the file is moved to <file>.bad-<offset> for the operator
// (.1, .2, ... appended if an earlier start took the name; new records are
// appended to the file), but for the zeros that end it, which hold
// nothing and are cut off; one in the middle, or a tail that cannot be
// copied aside (a full disk), stays in place and the reader jumps over it. A bad header moves the whole file aside (to .bad-0), but for
// this file's header cut short, zeros after the cut, with intact items
// after it, which is written again (spillzerohead.go); a file
// that holds nothing, not even its whole header (empty, zeros: a crash
// soon after the start that created it, whose header is not fsynced), is
// made anew without a word.
//
// Write-through: items appended in this run are also kept in memory (up
// to memCap bytes of URLs per file) and sent from there, so the file is
// written (and fsynced by the caller's Sync) but read only for items of
// an earlier run or items beyond memCap (spillmem.go).
const (
	spillMagic   = "kspl"
	spillVersion = 2
	spillHeader  = 16
	recItem      = 1
	recMark      = 2
	recHead      = 8
	flushAt      = 64 << 10
)

type spill struct {
	path       string
	self, peer NodeID
	version    uint16 // the file's format: spillVersion, or 1 (recSum)
	f          *os.File
	maxURL     int
	buf        []byte // appended records not yet written
	end        int64  // logical end, buf included
	flushed    int64  // bytes written to the file
	readOff    int64  // next record to read back
	consumed   int64  // last mark written (or found on open)
	dirty      bool   // written since the last fsync
	syncErr    error  // the first failed fsync: sticky (sync)
	// unwritten counts the item records appended since buf was last
	// written out whole: what a failing write may have lost (at most).
	unwritten int64
	items     bool // items appended since the last fsync (syncItems)
	// newEntry is set while the file's directory entry, made by this
	// open, is not yet fsynced: the file's own fsync does not make its
	// name durable, so a power cut after a Sync could leave no file.
	newEntry bool

	unreadItems int64 // items at or after readOff
	// unreadControl is how many of them are control items (a tag at or
	// above controlTag, Config.ControlTag; 0: none are).
	unreadControl int64
	controlTag    uint64
	// bad holds the damaged stretches (found at open) that readChunk
	// still has to jump over, in file order: the first spillBadKept of
	// them (keepBad). The reader finds those after them again, between
	// unlistedFrom and unlistedTo (0, 0: none), and skips them without
	// counting or reporting them a second time.
	bad                      []spillRegion
	unlistedFrom, unlistedTo int64
	skippedBytes             int64 // damaged bytes skipped: found at open (a tail cut off included) or by the reader
	skippedRegions           int   // damaged stretches so skipped
	spilledItems             uint64
	errs                     []string // see note
	unlisted                 int      // messages note left out of errs
	lastNoted                string   // the last message note took
	lastErr                  string   // the last error news took
	rbuf                     []byte
	scratch                  []byte
	// skipWin is the window the reader searches for the next intact
	// record through (nil: none yet, or the file was cut back or
	// rewritten): one per search read 256 KiB for each damaged stretch,
	// gigabytes for a file damaged in many places.
	skipWin *spillWindow

	mem spillMem // items appended in this run, not yet read (spillmem.go)
	// compactAt is the acknowledged bytes that make the file worth
	// rewriting without them (spillcompact.go; tests lower it).
	compactAt int64
	// compacting is the rewrite under way, if any (spillcompact.go).
	compacting  *spillCompaction
	compactHook func() // tests: see spillCompaction.hook
	// tailDirSync fsyncs the directory in cutTail (nil: syncDir; tests
	// make it fail, or look at the file when it is called).
	tailDirSync func(dir string) error
}

func spillPath(dir string, self, peer NodeID) string {
	return filepath.Join(dir, fmt.Sprintf("spill-%d-%d", self, peer))
}

// openSpill opens or creates the spill file of peer, finds where reading
// resumes, and cuts off a damaged tail (reported in errs, not fatal: the
// readable part is still delivered).
func openSpill(dir string, self, peer NodeID, maxURL int, controlTag uint64) (*spill, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	path := spillPath(dir, self, peer)
	s := &spill{path: path, self: self, peer: peer, version: spillVersion, maxURL: maxURL, compactAt: spillCompactAt, controlTag: controlTag}
	s.mem.controlTag = controlTag
	// A compaction a crash cut short: the file is whole without it.
	if err := os.Remove(path + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	// Not O_APPEND: flush writes each record at the offset its checksum
	// names (see flush).
	f, err := openNoLink(path, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		// O_EXCL: a dangling symbolic link there is refused, not
		// followed to create its target.
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return nil, fmt.Errorf("communicator: %w", err)
		}
		s.f = f
		if _, err := f.WriteAt(spillHeaderBytes(self, peer), 0); err != nil {
			f.Close()
			return nil, fmt.Errorf("communicator: %s: %w", path, err)
		}
		s.end, s.flushed, s.readOff, s.consumed = spillHeader, spillHeader, spillHeader, spillHeader
		s.newEntry = true // fsynced with the first records made durable
		s.mem.start(s.end)
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	s.f = f
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("communicator: %w", err)
	}
	sc, hdr, scanErr := scanSpillHeaderless(f, fi.Size(), self, peer, maxURL, controlTag)
	if hdr != nil {
		if _, err := f.WriteAt(hdr, 0); err != nil {
			f.Close()
			return nil, fmt.Errorf("communicator: spill file %s: writing its header again: %w", path, err)
		}
		s.note(fmt.Sprintf("spill file %s: %s", path, headerLostText(&sc)))
	}
	if errors.Is(scanErr, errSpillUnwritten) {
		// Nothing in it to keep aside or to say: made anew.
		f.Close()
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("communicator: %w", err)
		}
		return openSpill(dir, self, peer, maxURL, controlTag)
	}
	if errors.Is(scanErr, errSpillNewer) {
		f.Close()
		return nil, fmt.Errorf("communicator: spill file %s: %w; run a build that reads it (or move it away: its items are then not delivered)", path, scanErr)
	}
	if scanErr != nil && !errors.Is(scanErr, errSpillHeader) {
		f.Close()
		return nil, fmt.Errorf("communicator: spill file %s: %w", path, scanErr)
	}
	if scanErr != nil {
		// Not even the header is right: keep the file aside, start anew.
		f.Close()
		bad := badName(path, 0)
		if err := os.Rename(path, bad); err != nil {
			return nil, fmt.Errorf("communicator: %w", err)
		}
		s2, err := openSpill(dir, self, peer, maxURL, controlTag)
		if s2 != nil {
			s2.note(fmt.Sprintf("spill file %s: %v; moved to %s, nothing in it delivered", path, scanErr, bad))
		}
		return s2, err
	}
	for i, r := range sc.bad {
		if i == len(sc.bad)-1 && sc.unlistedTo > sc.consumed {
			// Those the scan did not list lie before its latest.
			s.keepUnlisted(max(sc.unlistedFrom, sc.consumed), sc.unlistedTo)
		}
		if r.end == fi.Size() && r.start == sc.good {
			break // the tail, below
		}
		if r.why != "" {
			s.note(fmt.Sprintf("spill file %s: %s; skipped %d bytes to the next intact record at offset %d", path, r.why, r.end-r.start, r.end))
		}
		if r.end > sc.consumed {
			s.keepBad(r)
		}
	}
	if bytes, n := sc.undescribed(); n > 0 {
		s.note(fmt.Sprintf("spill file %s: %s", path, undescribedText(&sc, n, bytes)))
	}
	end := sc.good
	if sc.good < fi.Size() {
		r := sc.bad[len(sc.bad)-1]
		msg := fmt.Sprintf("spill file %s: %s; the %d intact items before offset %d are delivered", path, r.why, sc.items, sc.good)
		zeros := fi.Size() - sc.zerosFrom
		if bad, err := s.cutTail(sc.good, sc.zerosFrom); err != nil {
			// The tail is still there, and new records go after it
			// (end): it stays, skipped like damage in the middle.
			msg += fmt.Sprintf("; keeping the damaged tail aside failed (%v): the %d bytes from there on stay in the file, skipped", err, fi.Size()-sc.good)
			s.keepBad(r)
			end = fi.Size()
		} else if bad == "" {
			msg += fmt.Sprintf(", the %d bytes from there on were all zeros (the file extended, or a crash's zero-filled tail) and are cut off", zeros)
		} else if zeros > 0 {
			msg += fmt.Sprintf(", the %d bytes from there on are in %s, and the %d zero bytes after them cut off", sc.zerosFrom-sc.good, bad, zeros)
		} else {
			msg += fmt.Sprintf(", the %d bytes from there on are in %s", fi.Size()-sc.good, bad)
		}
		s.note(msg)
	}
	s.version = sc.version
	s.skippedBytes, s.skippedRegions = sc.skipped()
	s.end, s.flushed, s.consumed, s.readOff = end, end, sc.consumed, sc.consumed
	s.unreadItems, s.unreadControl = int64(sc.unread), int64(sc.unreadControl)
	s.mem.start(s.end) // what is there already is read from the file
	return s, nil
}

func (s *spill) appendRecord(payload []byte) {
	s.buf = binary.BigEndian.AppendUint32(s.buf, uint32(len(payload)))
	s.buf = binary.BigEndian.AppendUint32(s.buf, recSum(s.version, s.end, payload))
	s.buf = append(s.buf, payload...)
	s.end += int64(recHead + len(payload))
}

// append adds one item to the file (buffered; written at the next tick
// or when 64 KB have gathered).
func (s *spill) append(tag uint64, url []byte) error {
	if !s.mem.on && s.readOff == s.end {
		s.mem.start(s.end) // the reader caught up: keep items again
	}
	s.scratch = append(s.scratch[:0], recItem)
	s.scratch = binary.AppendUvarint(s.scratch, tag)
	s.scratch = append(s.scratch, url...)
	s.appendRecord(s.scratch)
	s.mem.keep(tag, url, s.end)
	s.items = true
	s.unwritten++
	s.unreadItems++
	if isControl(s.controlTag, tag) {
		s.unreadControl++
	}
	s.spilledItems++
	if len(s.buf) >= flushAt {
		return s.flush()
	}
	return nil
}

// flush writes the buffered records, at flushed: where their checksums
// (and the reader, and memory's offsets) place them, whatever the file's
// size now. Appended (O_APPEND), records written after something else
// cut the file (a truncate, a tool) and before a read saw the cut landed
// at its new end, away from the offsets they were counted at, and were
// read as damage: not delivered, in this run nor after a restart. Now
// the bytes the cut took read as zeros, damage the reader skips to the
// records after it.
func (s *spill) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	n, err := s.f.WriteAt(s.buf, s.flushed)
	s.flushed += int64(n)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.dirty = true
	if len(s.buf) == 0 {
		s.unwritten = 0
	}
	if err != nil {
		return fmt.Errorf("spill file %s: writing at offset %d: %w", s.path, s.flushed, err)
	}
	return nil
}

func (s *spill) unread() bool { return s.readOff < s.end }

// readChunk reads item records from readOff into q until q holds limit
// bytes or the file ends: from memory where it holds them (spillmem.go),
// else from the file, up to where memory takes over.
func (s *spill) readChunk(q *queue, limit int) error {
	if s.mem.covers(s.readOff) {
		s.readMem(q, limit)
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	maxPayload := 1 + binary.MaxVarintLen64 + s.maxURL // what the open's scan takes (spillWindow.record)
	want := int64(limit) + int64(recHead+maxPayload)
	upTo := s.flushed
	if s.mem.on {
		upTo = min(upTo, s.mem.from)
	}
	if want > upTo-s.readOff {
		want = upTo - s.readOff
	}
	if int64(cap(s.rbuf)) < want {
		s.rbuf = make([]byte, want)
	}
	b := s.rbuf[:want]
	start, hungry := s.readOff, q.bytes < limit
	k, err := s.f.ReadAt(b, s.readOff)
	if err != nil && err != io.EOF {
		return fmt.Errorf("spill file %s: reading at offset %d: %w", s.path, s.readOff, err)
	}
	// Short only if the file shrank under us: the rest of rbuf holds an
	// earlier chunk's records, which must not be read again.
	b = b[:k]
	var shrinkErr error
	if int64(k) < want {
		var size int64
		if size, shrinkErr = s.shrank(); size < 0 {
			return shrinkErr
		}
		upTo = min(upTo, size)
	}
	var itemErr, skipErr error
	// skip passes over a record damaged since the open checked the file
	// (damage under the reader), to the next intact record before upTo,
	// as the open does: giving up on everything to upTo lost, for one bad
	// sector, all the items spilled after it (gigabytes, for a peer down
	// for long). It reports whether b still holds the next record.
	skip := func(why string) bool {
		if s.skipWin == nil {
			s.skipWin = &spillWindow{r: s.f, version: s.version}
		}
		// What it holds lies below an earlier upTo, not past this one:
		// records already written, which do not change.
		w := s.skipWin
		w.size = upTo
		next, err := w.resync(s.readOff+1, s.maxURL)
		if err != nil && shrinkErr == nil {
			// The file may have shrunk under the reader since its read:
			// the search met the end short of upTo, and gave up the
			// intact records before the cut with what it took.
			if size, cut := s.shrank(); size >= 0 && cut != nil {
				shrinkErr, upTo = cut, min(upTo, size)
				w.size = upTo
				next, err = w.resync(s.readOff+1, s.maxURL)
			}
		}
		if err != nil {
			next = upTo // not even readable: the rest is lost
		}
		if s.readOff < s.unlistedFrom || s.readOff >= s.unlistedTo {
			skipErr = fmt.Errorf("spill file %s: %s in record at offset %d (damaged under the reader); skipped %d bytes to the next intact record at offset %d", s.path, why, s.readOff, next-s.readOff, next)
			s.note(skipErr.Error())
			s.skippedBytes += next - s.readOff
			s.skippedRegions++
		} // else one the open found, counted and reported, not kept (keepBad)
		adv := next - s.readOff
		s.readOff = next
		if adv > int64(len(b)) {
			return false
		}
		b = b[adv:]
		return true
	}
	for q.bytes < limit {
		if len(s.bad) > 0 && s.readOff == s.bad[0].start {
			// A damaged stretch the open scan found: jump over it.
			skip := s.bad[0].end - s.readOff
			s.readOff = s.bad[0].end
			s.bad = s.bad[1:]
			if skip > int64(len(b)) {
				break
			}
			b = b[skip:]
			continue
		}
		if len(b) < recHead {
			break
		}
		n := int(binary.BigEndian.Uint32(b))
		if n > maxPayload {
			// Longer than any record: damage, as the open's scan says.
			// Taken for a record cut by the end of this read, it was
			// read again from its start at the next call, and, nothing
			// whole there, everything up to upTo was given up.
			if !skip(fmt.Sprintf("bad record length %d", n)) {
				break
			}
			continue
		}
		if n > len(b)-recHead {
			if int64(len(b)) < upTo-s.readOff {
				break // the rest of the record is beyond this read
			}
			if !skip(fmt.Sprintf("length %d running past the end", n)) {
				break
			}
			continue
		}
		pl := b[recHead : recHead+n]
		why := ""
		switch {
		case n < 2: // zeroed bytes have a matching checksum, and no type
			why = fmt.Sprintf("bad record length %d", n)
		case recSum(s.version, s.readOff, pl) != binary.BigEndian.Uint32(b[4:]):
			why = "checksum mismatch"
		}
		if why != "" {
			if !skip(why) {
				break
			}
			continue
		}
		if pl[0] == recItem {
			s.unreadItems--
			tag, url, err := parseItemRecord(pl, s.maxURL)
			if err != nil {
				// The file changed under us, as above, but only this
				// record: it is lost, the rest is read on.
				itemErr = fmt.Errorf("spill file %s: record at offset %d: %v; its item not delivered", s.path, s.readOff, err)
				s.note(itemErr.Error())
			} else {
				q.push(tag, url)
				if isControl(s.controlTag, tag) {
					s.unreadControl--
				}
			}
		}
		s.readOff += int64(recHead + n)
		b = b[recHead+n:]
	}
	if hungry && s.readOff == start && s.readOff < upTo {
		// Nothing readable where something should be: never spin on it.
		err := fmt.Errorf("spill file %s: no whole record at offset %d; %d bytes not delivered", s.path, s.readOff, upTo-s.readOff)
		s.note(err.Error())
		s.skipTo(upTo)
		return err
	}
	if s.readOff >= upTo {
		// Exact here, whatever damage took: the items skipped with it
		// were counted unread.
		s.skipTo(s.readOff)
	}
	if skipErr == nil {
		skipErr = itemErr
	}
	if shrinkErr != nil && skipErr != nil {
		// Both are in errs already: news must not note them a third time.
		skipErr = errors.Join(shrinkErr, skipErr)
		s.lastNoted = skipErr.Error()
		return skipErr
	}
	if shrinkErr != nil {
		return shrinkErr
	}
	return skipErr
}

// news records err in errs and reports whether to log it: an error that
// comes back at every tick (a full disk, a failing device) is said and
// kept once until another takes its place, not a line per tick and a
// list that grows as long as it lasts.
func (s *spill) news(err error) bool {
	msg := err.Error()
	if msg == s.lastErr {
		return false
	}
	s.lastErr = msg
	if msg != s.lastNoted { // readChunk's own are there
		s.note(msg)
	}
	return true
}

// spillErrsMax bounds the messages a spill file keeps in errs, which the
// endpoint logs at its start and Stats copies: a file damaged in many
// places (every other record: 150,000 stretches in 19 MB) logged a line
// for each and kept them all. The damage is counted whole all the same
// (skippedRegions, skippedBytes).
const spillErrsMax = 32

// note records msg in errs: the first spillErrsMax-1 messages, then the
// latest in the last place, saying how many it stands for.
func (s *spill) note(msg string) {
	s.lastNoted = msg
	if len(s.errs) < spillErrsMax {
		s.errs = append(s.errs, msg)
		return
	}
	s.unlisted++
	s.errs[spillErrsMax-1] = fmt.Sprintf("%s (and %d errors of this file before it, not listed: the damaged stretches the start found are all counted in PeerStats.SpillDamaged)", msg, s.unlisted)
}

// mark records that everything before off is acknowledged; when that is
// the whole file it is truncated back to its header.
func (s *spill) mark(off int64, idle bool) error {
	if off <= s.consumed {
		return nil
	}
	// Not while a rewrite copies the file: the mark is copied with the
	// rest, and the next upkeep truncates.
	if idle && off == s.end && s.compacting == nil {
		if err := s.flush(); err != nil {
			return err
		}
		if err := s.f.Truncate(spillHeader); err != nil {
			return fmt.Errorf("spill file %s: %w", s.path, err)
		}
		if s.version != spillVersion {
			if err := s.upgrade(); err != nil {
				return err
			}
		}
		s.end, s.flushed, s.readOff, s.consumed = spillHeader, spillHeader, spillHeader, spillHeader
		s.bad, s.unlistedFrom, s.unlistedTo = nil, 0, 0
		s.skipWin = nil
		s.dirty = true
		s.mem.start(s.end)
		return nil
	}
	var p [9]byte
	p[0] = recMark
	binary.BigEndian.PutUint64(p[1:], uint64(off))
	s.appendRecord(p[:])
	s.consumed = off
	return nil
}

// sync writes buffered records and fsyncs if anything was written. An
// fsync that failed fails every later one: the kernel may have dropped
// the pages it could not write and reports that once (a second fsync
// succeeds over the loss), so what was written before can no longer be
// said durable, and a Sync that said so would let the caller take items
// for saved that a crash then loses.
func (s *spill) sync() error {
	if s.syncErr != nil {
		return s.syncErr
	}
	if err := s.flush(); err != nil {
		return err
	}
	if s.dirty {
		if err := s.f.Sync(); err != nil {
			s.syncErr = fmt.Errorf("spill file %s: fsync failed, so records written before may be lost: %w", s.path, err)
			s.dirty = false // nothing to retry: the timer need not tick for it
			return s.syncErr
		}
		s.dirty = false
	}
	if s.newEntry && s.items {
		// Once, when something in the file is first to be durable. A
		// failure leaves items set: the caller's next Sync tries again.
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			return fmt.Errorf("spill file %s: fsync of its directory failed, so the new file, with the records written to it, may be lost: %w", s.path, err)
		}
		s.newEntry = false
	}
	s.items = false
	return nil
}

// syncItems is sync if items were appended since the last fsync. Marks
// alone (what the peer acknowledged, a truncation) wait for the next
// fsync: losing them in a crash only delivers acknowledged items again.
// A cluster node's writer syncs every 200 ms while pages come in, and
// acknowledgements arrive all the time: the marks alone made it fsync
// files it had spilled nothing into (with host partitioning, a tenth of
// its spill fsyncs).
func (s *spill) syncItems() error {
	if !s.items {
		return nil
	}
	return s.sync()
}

func (s *spill) close() error {
	err := s.sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
