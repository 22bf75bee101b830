package scheduler

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"unsafe"
)

// State is what the scheduler knows about one URL id.
type State uint8

// The states of a URL. InList, InProgress and Stalled are unfinished: the
// sliding window cannot move past them. The others are final, but for
// Filtered, which Requeue makes InList again.
const (
	Absent       State = iota // id never added (a zero record)
	InList                    // waiting to be handed out
	InProgress                // in a list handed out; InList again after a restart
	Completed                 // fetched (any status the node took as final)
	Stalled                   // a temporary failure; retried after back-off
	Filtered                  // out of scope; never fetched
	RobotsDenied              // robots.txt forbids it
	Failed                    // failed permanently, or too many retries
	Redirected                // fetched; the answer was a redirect
	numStates
)

var stateNames = [numStates]string{"absent", "in-list", "in-progress", "completed", "stalled", "filtered", "robots-denied", "failed", "redirected"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Unfinished reports whether the URL still waits for a fetch.
func (s State) Unfinished() bool { return s == InList || s == InProgress || s == Stalled }

// A state record is one little-endian uint64 per URL id, at offset
// 64 + 8·id of sched.states:
//
//	bits  0..3   state
//	bits  4..7   retries: temporary failures so far
//	bits  8..15  depth: link depth (255 = unknown)
//	bits 16..43  host number (index into sched.hosts)
//	bits 44..47  hops: the redirects in a row that led to the URL (since
//	             format version 4; 0 for a URL found by a link or a seed)
//	bits 48..63  check: the low 16 bits of CRC-32C over the id (4 bytes,
//	             little endian) followed by bits 0..47 (6 bytes)
//
// Before format version 4 bits 16..47 were all the host number. The hops
// are stored because a redirect's target keeps its page's depth: counted
// in memory, a chain being followed when the node stopped started its
// count again at the next run, and a node killed in a loop followed a
// hostile chain without end. A version 3 record is a version 4 record with
// no hops unless its host number is 2^28 or more, which no table of this
// build holds: decodeStates refuses such a record as damage rather than
// read its high host bits as hops.
//
// Any record must carry a known state and a matching check; the id in the
// check catches a record written to the wrong place. Eight-byte aligned
// stores are atomic, so a crash never leaves half a record.
//
// Format version 2 (this one) never leaves an all-zero record below the
// highest id added: an id skipped by an Add further on gets a gap record
// (state Absent, retries 0, depth 255, host 2^32-1, and its check), so a
// zeroed record inside the committed part is damage, not "never added".
// Past the committed part an all-zero record is still an id never
// written. Version 1 files (zero records anywhere) are read, and Open
// converts them by writing gap records into their holes.
type record uint64

const (
	recordSize   = 8
	payloadBits  = 48
	payloadMask  = 1<<payloadBits - 1
	maxRetries   = 15
	unknownDepth = 255
	hostBits     = 28
	// MaxHops is the most redirects in a row a record holds (4 bits).
	MaxHops = 15
)

func recordCheck(id uint32, payload uint64) uint64 {
	var b [10]byte
	binary.LittleEndian.PutUint32(b[0:], id)
	binary.LittleEndian.PutUint16(b[4:], uint16(payload))
	binary.LittleEndian.PutUint32(b[6:], uint32(payload>>16))
	return uint64(crc32.Checksum(b[:], castagnoli) & 0xffff)
}

// gapHost is the host number of a gap record; never a real host (Host
// numbers stay below 2^28-1). A gap record's hops are MaxHops: its bits
// 16..47 are all ones, as in every format version.
const gapHost = 1<<hostBits - 1

// gapRecord is the record of id when a later id was added first.
func gapRecord(id uint32) record {
	return makeRecord(id, Absent, 0, unknownDepth, gapHost).withHops(id, MaxHops)
}

// added reports whether r is the record of an added URL (not zero, not a gap).
func (r record) added() bool { return r.state() != Absent }

// makeRecord makes a record with no hops (see withHops).
func makeRecord(id uint32, st State, retries, depth uint8, host uint32) record {
	p := uint64(st)&15 | uint64(retries&15)<<4 | uint64(depth)<<8 | uint64(host&gapHost)<<16
	return record(p | recordCheck(id, p)<<payloadBits)
}

func (r record) state() State    { return State(r & 15) }
func (r record) retries() uint8  { return uint8(r>>4) & 15 }
func (r record) depth() uint8    { return uint8(r >> 8) }
func (r record) host() uint32    { return uint32(r>>16) & gapHost }
func (r record) hops() uint8     { return uint8(r>>(16+hostBits)) & MaxHops }
func (r record) payload() uint64 { return uint64(r) & payloadMask }

// hostBeyond reports whether r, an added record of a states file of format
// version, names a host number this build never gives: before version 4,
// bits 16..47 were all the host number, and set hop bits are a host of
// 2^28 or more.
func (r record) hostBeyond(version uint32) bool { return version < 4 && r.hops() != 0 }

// with returns r for id with state and retries replaced.
func (r record) with(id uint32, st State, retries uint8) record {
	return makeRecord(id, st, retries, r.depth(), r.host()).withHops(id, r.hops())
}

// withDepth returns r for id with depth d.
func (r record) withDepth(id uint32, d uint8) record {
	return makeRecord(id, r.state(), r.retries(), d, r.host()).withHops(id, r.hops())
}

// withHops returns r for id with hops h (at most MaxHops).
func (r record) withHops(id uint32, h uint8) record {
	p := r.payload()&^(MaxHops<<(16+hostBits)) | uint64(min(h, MaxHops))<<(16+hostBits)
	return record(p | recordCheck(id, p)<<payloadBits)
}

// checkRecord reports what is wrong with the record of id, if anything.
// A zero record is not checked here: whether it may be zero depends on
// where it lies (decodeStates).
func checkRecord(id uint32, r record) error {
	if r == 0 {
		return nil
	}
	if st := r.state(); st >= numStates {
		return fmt.Errorf("state %d is not a state", uint8(st))
	} else if st == Absent && r.payload() != gapRecord(id).payload() {
		return fmt.Errorf("state absent with depth %d, retries %d, host %d: not a gap record", r.depth(), r.retries(), r.host())
	}
	if c := uint64(r) >> payloadBits; c != recordCheck(id, r.payload()) {
		return fmt.Errorf("check %#04x, want %#04x", c, recordCheck(id, r.payload()))
	}
	return nil
}

// records views a mapped file after its header as native uint64s (mappings
// are page aligned, and kspider runs on little-endian CPUs).
func records(b []byte) []record {
	if len(b) < headerSize+recordSize {
		return nil
	}
	b = b[headerSize:]
	return unsafe.Slice((*record)(unsafe.Pointer(&b[0])), len(b)/recordSize)
}

// stateScan is what decodeStates found.
type stateScan struct {
	count      uint64 // highest id with a record + 1
	inProgress int    // records turned back from InProgress to InList
	dropped    int    // records past the durable prefix whose host was lost
}

// decodeStates checks every record of a states file (recs, from the file
// at path, of format version) against the durable prefix of durable
// records and the nHosts known hosts, and repairs what a crash may leave:
// InProgress goes back to InList, and a record past the durable prefix
// naming a host that did not survive becomes a gap record (counted in
// dropped). In a version 2 file an all-zero record inside the durable
// prefix is damage. Anything else wrong is an error naming the id and its
// offset; with a sink (Check) it is recorded there and the scan goes on.
func decodeStates(path string, version uint32, recs []record, durable uint64, nHosts uint32, sink *findings) (stateScan, error) {
	var s stateScan
	if durable > uint64(len(recs)) {
		if err := sink.damage(path, headerSize+int64(len(recs))*recordSize, "commit says %d records, file holds %d", durable, len(recs)); err != nil {
			return s, err
		}
	}
	zeroFrom := -1 // first of a run of zero records inside the durable prefix
	for i, r := range recs {
		if r == 0 {
			if version >= 2 && uint64(i) < durable && zeroFrom < 0 {
				zeroFrom = i
			}
			continue
		}
		if zeroFrom >= 0 {
			if err := zeroRun(path, zeroFrom, i, sink); err != nil {
				return s, err
			}
			zeroFrom = -1
		}
		id := uint32(i)
		off := headerSize + int64(i)*recordSize
		if uint64(i) > uint64(^uint32(0)) {
			return s, sink.fatal(path, off, "record is beyond id 2^32-1")
		}
		if err := checkRecord(id, r); err != nil {
			if err := sink.damage(path, off, "id %d: %v", id, err); err != nil {
				return s, err
			}
			continue
		}
		if !r.added() {
			continue // a gap record
		}
		if r.hostBeyond(version) {
			if err := sink.damage(path, off, "id %d names host %d (format version %d); this build's host numbers stay below 2^%d", id, uint32(r>>16), version, hostBits); err != nil {
				return s, err
			}
			continue
		}
		if r.host() >= nHosts {
			if uint64(i) < durable {
				if err := sink.damage(path, off, "id %d names host %d; the host table has %d", id, r.host(), nHosts); err != nil {
					return s, err
				}
				continue
			}
			recs[i] = gapRecord(id)
			s.dropped++
			continue
		}
		if r.state() == InProgress {
			recs[i] = r.with(id, InList, r.retries())
			s.inProgress++
		}
		s.count = uint64(i) + 1
	}
	if zeroFrom >= 0 {
		if err := zeroRun(path, zeroFrom, int(min(durable, uint64(len(recs)))), sink); err != nil {
			return s, err
		}
	}
	s.count = max(s.count, durable)
	return s, nil
}

// zeroRun reports the all-zero records from..to-1 inside the durable
// prefix of a version 2 states file: one finding per run, naming its ids.
func zeroRun(path string, from, to int, sink *findings) error {
	off := headerSize + int64(from)*recordSize
	if to-from == 1 {
		return sink.damage(path, off, "id %d: all-zero record inside the committed part (a valid record is never zero)", from)
	}
	return sink.damage(path, off, "ids %d to %d: %d all-zero records inside the committed part (a valid record is never zero)", from, to-1, to-from)
}

// convertStates brings a version 1 states file to version 2: every zero
// record below the highest id becomes a gap record, the records are made
// durable, and only then does the header say version 2, so a crash in
// between leaves a version 1 file (still read) or a complete version 2.
func (s *Scheduler) convertStates() error {
	for i := range s.count {
		if s.recs[i] == 0 {
			s.recs[i] = gapRecord(uint32(i))
		}
	}
	if err := s.statesF.sync(); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(s.statesF.data[8:], oldVersion(magicStates))
	if err := s.statesF.sync(); err != nil {
		return err
	}
	s.opened.Converted = true
	return nil
}
