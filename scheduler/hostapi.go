package scheduler

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Host returns the number of host name, adding it to the table if new.
// Names are compared with ASCII letters lower-cased.
func (s *Scheduler) Host(name string) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, err
	}
	return s.host(name)
}

// FindHost returns the number of host name if the table has it, without
// adding it (the node's per-domain budget asks before a host may cost one).
func (s *Scheduler) FindHost(name string) (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil {
		return 0, false
	}
	if h, ok := s.index.find(name, s.names); ok {
		return h, true
	}
	return s.index.find(asciiLower(name), s.names)
}

func (s *Scheduler) host(name string) (uint32, error) {
	if h, ok := s.index.find(name, s.names); ok {
		return h, nil
	}
	name = asciiLower(name)
	if h, ok := s.index.find(name, s.names); ok {
		return h, nil
	}
	if err := checkHostName(name); err != nil {
		return 0, err
	}
	num := len(s.hosts)
	if uint64(num) >= gapHost {
		return 0, fmt.Errorf("%w: the host table is full", ErrBadHost)
	}
	if err := s.namesF.ensure(headerSize + int64(s.namesLen) + int64(len(name))); err != nil {
		return 0, s.checkMapping(s.namesF, err)
	}
	if err := s.hostsF.ensure(headerSize + int64(num+1)*hostRecSize); err != nil {
		return 0, s.checkMapping(s.hostsF, err)
	}
	copy(s.namesF.data[headerSize+s.namesLen:], name)
	name = strings.Clone(name)
	h := hostRec{hash: HostHash(name), nameOff: s.namesLen, nameLen: uint16(len(name))}
	s.namesLen += uint64(len(name))
	if len(s.hosts) == cap(s.hosts) {
		// Double rather than append's quarter for large slices: a crawl
		// meets hosts all the time, and each growth copies every table.
		n := max(1024, 2*len(s.hosts))
		s.hosts = slices.Grow(s.hosts, n)
		s.names = slices.Grow(s.names, n)
		s.phase = slices.Grow(s.phase, n)
		s.runIdx = slices.Grow(s.runIdx, n)
	}
	s.hosts = append(s.hosts, h)
	s.names = append(s.names, name)
	s.index.insert(uint32(num), s.names)
	s.phase = append(s.phase, s.phaseOf(h.hash, name))
	s.runIdx = append(s.runIdx, 0)
	s.putHost(uint32(num))
	return uint32(num), nil
}

func (s *Scheduler) checkMapping(f *mappedFile, err error) error {
	if f.data == nil {
		s.broken = fmt.Errorf("scheduler: %s lost its mapping after a failed grow: %w", f.path, err)
	}
	return err
}

// asciiLower lower-cases ASCII letters only, as HostHash does: host names
// reach the scheduler in canonical form (IDNA names as xn--), and other
// bytes are kept as they are.
func asciiLower(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

// putHost writes host h's record through to its file.
func (s *Scheduler) putHost(h uint32) {
	off := headerSize + int(h)*hostRecSize
	s.hosts[h].encode(h, s.hostsF.data[off:off+hostRecSize])
}

// HostInfo is what the scheduler stores about one host.
type HostInfo struct {
	Name       string
	Phase      int
	NextStart  time.Time // no list starts before
	RetryUntil time.Time // zero: none
	CrawlDelay time.Duration
	Robots     RobotsStatus
	ErrStreak  int
	Pages      uint32
	IP         netip.Addr // as SetIP gave it last, while kept
	Bucket     BucketState
}

// HostInfo returns what is stored about host h.
func (s *Scheduler) HostInfo(h uint32) (HostInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableHost(h); err != nil {
		return HostInfo{}, err
	}
	r := &s.hosts[h]
	i := HostInfo{Name: s.names[h], Phase: int(s.phase[h]), CrawlDelay: time.Duration(r.crawlDelay) * time.Millisecond,
		Robots: r.robots, ErrStreak: int(r.errStreak), Pages: r.pages, IP: s.rt.ipOf[h], Bucket: s.rt.bucketState(s, h)}
	if r.nextStart != 0 {
		i.NextStart = time.Unix(0, r.nextStart)
	}
	if r.retryUntil != 0 {
		i.RetryUntil = time.Unix(0, r.retryUntil)
	}
	return i, nil
}

// Hosts returns the number of hosts in the table.
func (s *Scheduler) Hosts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hosts)
}

// SetRobots records host h's robots.txt status and Crawl-delay.
func (s *Scheduler) SetRobots(h uint32, st RobotsStatus, crawlDelay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableHost(h); err != nil {
		return err
	}
	if st >= numRobots {
		return fmt.Errorf("scheduler: robots status %d", st)
	}
	ms := min(max(crawlDelay, 0)/time.Millisecond, 1<<32-1)
	s.hosts[h].robots, s.hosts[h].crawlDelay = st, uint32(ms)
	s.putHost(h)
	return nil
}

// AdmitPage counts one more page of host h against limit and reports
// whether it is within it (the per-host page budget; limit 0: none).
func (s *Scheduler) AdmitPage(h uint32, limit uint32) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableHost(h); err != nil {
		return false, err
	}
	r := &s.hosts[h]
	if limit != 0 && r.pages >= limit {
		return false, nil
	}
	if r.pages < 1<<32-1 {
		r.pages++
		s.putHost(h)
	}
	return true, nil
}

// SetIP tells the scheduler host h's address, for MaxHostsPerIP. It is
// kept in memory only, and forgotten once the host has nothing queued or
// out and many addresses are kept (forgetIPs): call it with every list.
// over reports that h has a list out that now makes
// more than MaxHostsPerIP hosts of ip fetch at once, which happens when
// the list went out before its host's address was known: the caller gives
// it back unfetched (NotTried), and the host's next list waits its turn
// on ip.
func (s *Scheduler) SetIP(h uint32, ip netip.Addr) (over bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableHost(h); err != nil {
		return false, err
	}
	return s.rt.setIP(s, h, ip), nil
}

// phaseOf is the phase of the host with the given hash and name.
func (s *Scheduler) phaseOf(hash uint64, name string) uint16 {
	if s.cfg.PhaseKey != nil {
		hash = HostHash(s.cfg.PhaseKey(name))
	}
	return uint16(hash % uint64(s.cfg.Phases))
}
