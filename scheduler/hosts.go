package scheduler

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"time"
)

// HostHash is the hash that places a host in a phase, the same on every
// node, run and architecture: 64-bit FNV-1a over the host name with ASCII
// letters lower-cased, finished with the SplitMix64 mixer (so that the low
// bits, which "mod P" keeps, depend on every input byte). A host's phase is
// HostHash(name) mod P. HostHash("example.com") = 0x4d07e1c6cc597ab7.
func HostHash(name string) uint64 { return hostHash(name) }

func hostHash[T string | []byte](name T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// HostPhase is the phase of host name among phases: HostHash(name) mod phases.
func HostPhase(name string, phases int) int { return int(HostHash(name) % uint64(phases)) }

// RobotsStatus is what the node last learnt about a host's robots.txt.
type RobotsStatus uint8

const (
	RobotsUnknown     RobotsStatus = iota // not fetched yet
	RobotsOK                              // fetched and parsed
	RobotsNone                            // 4xx: no rules, everything allowed
	RobotsUnreachable                     // 5xx or network error: everything disallowed for now
	numRobots
)

// MaxHostLen is the longest host name the table takes. The node's names
// are host keys ("https:", the host, a port): a DNS name of 253 bytes and
// the root's dot, with "https:" and ":65535", is 266 bytes (bracketed IPv6
// literals are shorter). Builds before this one took 255 bytes, which
// refused such a valid URL; the record layout and format version are the
// same, so their files read as they are, but such a build reports a file
// holding a longer name as damaged (name length over 255).
const MaxHostLen = 266

// A host record is 64 bytes at offset 64 + 64·n of sched.hosts, little
// endian:
//
//	offset size
//	0      8    hash: HostHash of the name
//	8      8    next start: no list may start before this (Unix ns)
//	16     8    Retry-After until (Unix ns; 0 = none)
//	24     8    name offset: where the name starts after sched.names' header
//	32     4    Crawl-delay in milliseconds
//	36     4    pages admitted (the per-host page budget)
//	40     2    name length (1..MaxHostLen)
//	42     1    robots status
//	43     1    error streak: temporary failures in a row
//	44     16   zero
//	60     4    CRC-32C over the host number (4 bytes) and bytes 0..59
//
// Names are stored back to back in sched.names, in host-number order, so
// each record's name offset is the previous one's end. The record's hash
// doubles as the name's checksum. An all-zero record ends the table.
// Bucket states, IP addresses and queued URLs are not stored: after a
// restart every host starts FREE and the window is scanned afresh.
type hostRec struct {
	hash       uint64
	nextStart  int64
	retryUntil int64
	nameOff    uint64
	crawlDelay uint32 // ms
	pages      uint32
	nameLen    uint16
	robots     RobotsStatus
	errStreak  uint8
}

const hostRecSize = 64

func (h *hostRec) encode(num uint32, b []byte) {
	binary.LittleEndian.PutUint64(b[0:], h.hash)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.nextStart))
	binary.LittleEndian.PutUint64(b[16:], uint64(h.retryUntil))
	binary.LittleEndian.PutUint64(b[24:], h.nameOff)
	binary.LittleEndian.PutUint32(b[32:], h.crawlDelay)
	binary.LittleEndian.PutUint32(b[36:], h.pages)
	binary.LittleEndian.PutUint16(b[40:], h.nameLen)
	b[42] = byte(h.robots)
	b[43] = h.errStreak
	clear(b[44:60])
	binary.LittleEndian.PutUint32(b[60:], hostCheck(num, b))
}

func hostCheck(num uint32, b []byte) uint32 {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], num)
	return crc32.Update(crc32.Checksum(n[:], castagnoli), castagnoli, b[:60])
}

func decodeHostRec(num uint32, b []byte) (hostRec, error) {
	h := hostRec{
		hash:       binary.LittleEndian.Uint64(b[0:]),
		nextStart:  int64(binary.LittleEndian.Uint64(b[8:])),
		retryUntil: int64(binary.LittleEndian.Uint64(b[16:])),
		nameOff:    binary.LittleEndian.Uint64(b[24:]),
		crawlDelay: binary.LittleEndian.Uint32(b[32:]),
		pages:      binary.LittleEndian.Uint32(b[36:]),
		nameLen:    binary.LittleEndian.Uint16(b[40:]),
		robots:     RobotsStatus(b[42]),
		errStreak:  b[43],
	}
	var sumErr error
	if sum, want := binary.LittleEndian.Uint32(b[60:]), hostCheck(num, b); sum != want {
		sumErr = fmt.Errorf("checksum %#08x, want %#08x", sum, want)
	}
	switch {
	case h.nameLen == 0 || h.nameLen > MaxHostLen:
		return h, cmp.Or(sumErr, fmt.Errorf("name length %d", h.nameLen))
	case !isZero(b[44:60]):
		return h, cmp.Or(sumErr, errors.New("reserved bytes are not zero"))
	case sumErr != nil:
		return h, fmt.Errorf("%w: %w", errHostChecksum, sumErr)
	case h.robots >= numRobots:
		return h, fmt.Errorf("robots status %d", h.robots)
	}
	return h, nil
}

// errHostChecksum is a host record whose fields are sane but whose
// checksum does not match them. A committed record is rewritten in place
// (putHost) whenever its politeness state changes, one aligned field store
// after another and the checksum last, so a kill -9 between two stores
// leaves exactly this: every field holds its old or its new value, and the
// checksum is the old one. decodeHosts keeps such a record when its name
// still verifies against its hash (see tornHost).
var errHostChecksum = errors.New("torn or damaged record")

// tornHost makes the soft state of a record whose checksum failed but whose
// name verified safe to use: each field is its old or its new value, or, on
// a damaged disk, anything; the bounds keep a flipped bit from holding a
// host back for years. Its count of pages admitted is set to the URLs it
// has once they are read (trimPages), so that no flipped bit admits pages
// past its budget.
func tornHost(h hostRec, now time.Time) hostRec {
	limit := now.Add(maxTornWait).UnixNano()
	h.nextStart = min(h.nextStart, limit)
	h.retryUntil = min(h.retryUntil, limit)
	h.crawlDelay = min(h.crawlDelay, uint32(maxTornWait/time.Millisecond))
	if h.robots >= numRobots {
		h.robots = RobotsUnknown // fetch it again
	}
	return h
}

// maxTornWait bounds the waits a torn host record may impose.
const maxTornWait = time.Hour

// hostScan is what decodeHosts found.
type hostScan struct {
	recs     []hostRec
	torn     []uint32 // committed records kept with a failed checksum (tornHost); Open rewrites them
	names    []string // shares one backing string
	index    hostIndex
	namesLen uint64
}

// decodeHosts reads the host table (hosts: sched.hosts, names: sched.names,
// both whole files) and checks every record: its checksum, that its name
// follows the previous one in the names file and hashes to its hash, and
// that no name repeats. The first durable records must all be there; past
// them the table ends at the first zero or invalid record (a crash may
// leave the tail of an unsynced page). Without a sink the first problem is
// the error; with one (Check) every problem is recorded there, a damaged
// committed record keeps its host number as a placeholder, and the next
// record's name offset is taken as it stands. clean is the commit's
// clean-close flag.
func decodeHosts(hostsPath, namesPath string, hosts, names []byte, durable, durableNames uint64, clean bool, sink *findings) (hostScan, error) {
	var s hostScan
	if len(hosts) < headerSize || len(names) < headerSize {
		return s, sink.fatal(hostsPath, 0, "it or %s is shorter than its header", namesPath)
	}
	body := hosts[headerSize:]
	nb := names[headerSize:]
	n := uint64(len(body) / hostRecSize)
	if durable > n {
		if err := sink.damage(hostsPath, int64(len(hosts)), "commit says %d hosts, file holds %d", durable, n); err != nil {
			return s, err
		}
	}
	if durable == 0 && durableNames != 0 {
		if err := sink.damage(namesPath, headerSize, "commit says %d name bytes and no hosts", durableNames); err != nil {
			return s, err
		}
	}
	if durableNames > uint64(len(nb)) {
		if err := sink.damage(namesPath, int64(len(names)), "commit says %d name bytes, file holds %d", durableNames, len(nb)); err != nil {
			return s, err
		}
	}
	if n > 1<<32-1 {
		n = 1<<32 - 1
	}
	var end, top uint64 // top: the furthest name end (end may move back after a resync)
	resync := false     // the previous record was damaged: its name's end is unknown
	// Room for the committed records only, not for all the file could
	// hold: one extended with zeros (a sparse terabyte) made this a
	// 200 GB allocation, and Open and Check died of it ("fatal error:
	// runtime: out of memory"). The table ends at the first zero record
	// past them anyway.
	s.recs = make([]hostRec, 0, min(n, durable))
	for i := range n {
		b := body[i*hostRecSize : (i+1)*hostRecSize]
		off := int64(headerSize + i*hostRecSize)
		h, err := decodeHostRec(uint32(i), b)
		// After a clean close no record can be torn: a bad checksum is
		// damage. After a crash it may be a torn rewrite (tornHost).
		sumErr := err
		torn := errors.Is(err, errHostChecksum) && i < durable && !clean
		if torn {
			err = nil // kept if its name verifies, below
		}
		file := hostsPath
		if err == nil {
			if resync {
				end, resync = h.nameOff, false
			}
			if h.nameOff != end {
				err = fmt.Errorf("name at %d, want %d (after the previous one)", h.nameOff, end)
			} else if h.nameOff+uint64(h.nameLen) > uint64(len(nb)) {
				err = fmt.Errorf("name %d+%d runs past the end of %s (%d bytes)", h.nameOff, h.nameLen, namesPath, len(nb))
			} else {
				name := nb[h.nameOff : h.nameOff+uint64(h.nameLen)]
				if err = checkHostName(name); err == nil && hostHash(name) != h.hash {
					err = fmt.Errorf("name %q does not match the hash in %s", name, hostsPath)
				}
				if err != nil {
					file, off = namesPath, int64(headerSize+h.nameOff)
				}
			}
			if err != nil && torn {
				// The record itself failed first: that is where the damage is.
				err, file, off = fmt.Errorf("%w (%w)", sumErr, err), hostsPath, int64(headerSize+i*hostRecSize)
			}
		}
		if err != nil {
			if i >= durable {
				if !isZero(b) {
					sink.leftover(file, off, "host %d past the commit: %v; a write the crash cut short, the table ends here", i, err)
				}
				break
			}
			if err := sink.damage(file, off, "host %d: %v", i, err); err != nil {
				return s, err
			}
			s.recs = append(s.recs, hostRec{})
			resync = true
			continue
		}
		if torn {
			sink.leftover(hostsPath, off, "host %d: checksum does not match a record whose name verifies: a rewrite in place cut short by a crash (or damage to its politeness fields); kept, its waits bounded to %v", i, maxTornWait)
			h = tornHost(h, time.Now())
			s.torn = append(s.torn, uint32(i))
		}
		s.recs = append(s.recs, h)
		end += uint64(h.nameLen)
		top = max(top, end)
		if i+1 == durable && end != durableNames {
			if err := sink.damage(namesPath, int64(headerSize+end), "the %d committed hosts' names end at %d, the commit says %d", durable, end, durableNames); err != nil {
				return s, err
			}
		}
	}
	all := string(nb[:top])
	s.names = make([]string, len(s.recs))
	s.index.grow(max(1024, 1<<bits.Len(uint(2*len(s.recs)))), s.names)
	for i, h := range s.recs {
		if h.nameLen == 0 {
			continue // a damaged record's placeholder (Check only)
		}
		name := all[h.nameOff : h.nameOff+uint64(h.nameLen)]
		s.names[i] = name
		if _, dup := s.index.find(name, s.names); dup {
			if err := sink.damage(hostsPath, int64(headerSize+i*hostRecSize), "host %d repeats the name %q", i, name); err != nil {
				return s, err
			}
			continue
		}
		s.index.insert(uint32(i), s.names)
	}
	s.namesLen = end
	return s, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// delay is the politeness wait after a list of h ends at now: the minimum,
// at least the Crawl-delay (capped), doubled per error in a row (capped),
// and never before Retry-After.
func (c *Config) delay(h *hostRec, now int64) int64 {
	d := c.MinDelay
	if cd := min(time.Duration(h.crawlDelay)*time.Millisecond, c.MaxCrawlDelay); cd > d {
		d = cd
	}
	if h.errStreak > 0 {
		b := max(d, c.ErrorDelay)
		for range min(int(h.errStreak)-1, 16) {
			b *= 2
			if b >= c.MaxBackoff {
				break
			}
		}
		d = min(b, max(c.MaxBackoff, d))
	}
	return max(now+int64(d), h.retryUntil)
}

// longestWait is the longest wait c imposes on host h after a list ends
// at now: its delay with its error back-off (delay, without Retry-After),
// and at least ErrorDelay, the wait after a list with both errors and
// successes, which the record does not tell apart.
func (c *Config) longestWait(h *hostRec, now int64) int64 {
	return max(c.delay(&hostRec{crawlDelay: h.crawlDelay, errStreak: h.errStreak}, now), now+int64(c.ErrorDelay))
}

// hostWait is when host h may start a list again: its next start or its
// Retry-After, whichever is later, but the next start never further from
// now than the wait the config imposes on h (longestWait), and the
// Retry-After never further than MaxRetryAfter. A wait stored by a run
// whose clock was ahead (set wrong, a VM restored) lay years ahead once
// the clock was right, and the host waited that long, holding its row of
// the buckets; one stored under a politeness delay since lowered (1 h to
// 1 s between two runs) had the host wait out the old one, up to an hour.
// Such a wait is cut, and stored so. Its Retry-After and its error
// back-off (by the config now) hold.
func (s *Scheduler) hostWait(h uint32, now int64) int64 {
	hr := &s.hosts[h]
	next, retry := min(hr.nextStart, s.cfg.longestWait(hr, now)), min(hr.retryUntil, now+int64(s.cfg.MaxRetryAfter))
	if next != hr.nextStart || retry != hr.retryUntil {
		hr.nextStart, hr.retryUntil = next, retry
		s.putHost(h)
	}
	return max(hr.nextStart, hr.retryUntil)
}

// checkHostName reports what makes name unfit for the table: it must be 1
// to MaxHostLen bytes of printable ASCII or UTF-8 without upper-case ASCII
// letters, spaces, '/' or control bytes (Add lower-cases names first).
func checkHostName[T string | []byte](name T) error {
	if len(name) == 0 || len(name) > MaxHostLen {
		return fmt.Errorf("%w: %d bytes (want 1..%d)", ErrBadHost, len(name), MaxHostLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f || c == '/' || ('A' <= c && c <= 'Z') {
			return fmt.Errorf("%w: %q has byte %#x at %d", ErrBadHost, name, c, i)
		}
	}
	return nil
}
