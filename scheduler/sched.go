package scheduler

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Scheduler owns what a node knows about every URL id and every host, and
// hands out per-host lists of ids to fetch. All methods are safe for
// concurrent use; one mutex guards everything (a list of 20 ids costs one
// lock round for the take and one per report).
type Scheduler struct {
	mu     sync.Mutex
	cfg    Config
	dir    string
	closed bool
	broken error // a failed remap left the files unusable

	meta    *metaFile
	statesF *mappedFile
	hostsF  *mappedFile
	namesF  *mappedFile

	recs  []record // the state file's records (a view of statesF)
	count uint64   // highest id added + 1

	hosts    []hostRec // copy of the host table, written through
	names    []string
	index    hostIndex
	namesLen uint64
	phase    []uint16 // per host: HostHash mod Phases
	runIdx   []int32  // per host: index+1 into runs, 0 = no runtime state

	rt      windowState
	opened  OpenStats
	notify  chan struct{}
	counter Counters
}

// OpenStats says what Open found.
type OpenStats struct {
	Created    bool          // a new, empty scheduler
	Clean      bool          // the last close was clean
	URLs       uint64        // state records (highest id + 1)
	Hosts      int           // host table entries
	InProgress int           // URLs turned back from in-progress to in-list
	Dropped    int           // unsynced URLs whose host did not survive a crash; the node must add them again
	Took       time.Duration // time Open took
}

// Open opens the scheduler in dir, creating it if dir holds none.
func Open(dir string, cfg Config) (*Scheduler, error) {
	start := time.Now()
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	s := &Scheduler{cfg: cfg, dir: dir, notify: make(chan struct{}, 1)}
	_, err := os.Stat(s.path(metaName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		for _, n := range []string{statesName, hostsName, namesName} {
			if _, err := os.Stat(s.path(n)); err == nil {
				return nil, fmt.Errorf("%w: %s exists without %s", ErrCorrupt, s.path(n), metaName)
			}
		}
		err = s.create()
	case err == nil:
		err = s.open()
	default:
		err = fmt.Errorf("scheduler: %w", err)
	}
	if err != nil {
		return nil, err
	}
	s.rt.init(s)
	s.opened.URLs, s.opened.Hosts, s.opened.Took = s.count, len(s.hosts), time.Since(start)
	return s, nil
}

func (s *Scheduler) path(name string) string { return filepath.Join(s.dir, name) }

func (s *Scheduler) create() error {
	var err error
	if s.statesF, err = createMapped(s.path(statesName), magicStates); err == nil {
		if s.hostsF, err = createMapped(s.path(hostsName), magicHosts); err == nil {
			if s.namesF, err = createMapped(s.path(namesName), magicNames); err == nil {
				if err = s.syncFiles(); err == nil {
					if s.meta, err = createMeta(s.path(metaName)); err == nil {
						err = syncDir(s.dir)
					}
				}
			}
		}
	}
	if err != nil {
		s.closeFiles()
		for _, n := range []string{metaName, statesName, hostsName, namesName} {
			os.Remove(s.path(n))
		}
		return err
	}
	s.recs = records(s.statesF.data)
	s.opened.Created, s.opened.Clean = true, true
	return nil
}

func (s *Scheduler) open() error {
	var err error
	if s.meta, err = openMeta(s.path(metaName)); err != nil {
		return err
	}
	if s.statesF, err = openMapped(s.path(statesName), magicStates); err == nil {
		if s.hostsF, err = openMapped(s.path(hostsName), magicHosts); err == nil {
			s.namesF, err = openMapped(s.path(namesName), magicNames)
		}
	}
	if err == nil {
		err = s.load()
	}
	if err != nil {
		s.closeFiles()
		return err
	}
	return nil
}

// load decodes the mapped files into the in-memory tables.
func (s *Scheduler) load() error {
	c := s.meta.last
	hs, err := decodeHosts(s.hostsF.path, s.namesF.path, s.hostsF.data, s.namesF.data, c.hosts, c.names)
	if err != nil {
		return err
	}
	s.hosts, s.names, s.index, s.namesLen = hs.recs, hs.names, hs.index, hs.namesLen
	s.recs = records(s.statesF.data)
	ss, err := decodeStates(s.statesF.path, s.recs, c.urls, uint32(len(s.hosts)))
	if err != nil {
		return err
	}
	s.count = ss.count
	s.opened.Clean = c.flags&flagClean != 0
	s.opened.InProgress, s.opened.Dropped = ss.inProgress, ss.dropped
	s.phase = make([]uint16, len(s.hosts))
	for i := range s.hosts {
		s.phase[i] = uint16(s.hosts[i].hash % uint64(s.cfg.Phases))
	}
	s.runIdx = make([]int32, len(s.hosts))
	return nil
}

// Opened returns what Open found.
func (s *Scheduler) Opened() OpenStats { return s.opened }

func (s *Scheduler) syncFiles() error {
	for _, f := range []*mappedFile{s.namesF, s.hostsF, s.statesF} {
		if err := f.sync(); err != nil {
			return err
		}
	}
	return nil
}

// Sync makes every change so far durable: the names, host and state files
// are written back, then a commit records how much of each to trust.
func (s *Scheduler) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	return s.commit(0)
}

func (s *Scheduler) commit(flags uint32) error {
	if err := s.syncFiles(); err != nil {
		return err
	}
	return s.meta.write(commit{urls: s.count, hosts: uint64(len(s.hosts)), names: s.namesLen, flags: flags})
}

// Close syncs with a clean mark and releases the files. URLs in lists
// still out stay in progress on disk and are in-list again at the next Open.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var err error
	if s.broken == nil {
		if err = s.commit(flagClean); err == nil {
			err = s.trim()
		}
	}
	if cerr := s.closeFiles(); err == nil {
		err = cerr
	}
	s.closed = true
	return err
}

// trim gives the preallocated tails of the files back at a clean close,
// so that they hold 8 bytes per URL, not up to a quarter more.
func (s *Scheduler) trim() error {
	for _, t := range []struct {
		f    *mappedFile
		size int64
	}{
		{s.statesF, headerSize + int64(s.count)*recordSize},
		{s.hostsF, headerSize + int64(len(s.hosts))*hostRecSize},
		{s.namesF, headerSize + int64(s.namesLen)},
	} {
		if t.size < int64(len(t.f.data)) {
			if err := t.f.f.Truncate(t.size); err != nil {
				return fmt.Errorf("scheduler: trim %s: %w", t.f.path, err)
			}
		}
	}
	return nil
}

func (s *Scheduler) closeFiles() error {
	var err error
	for _, f := range []*mappedFile{s.statesF, s.hostsF, s.namesF} {
		if f != nil {
			if cerr := f.close(); err == nil {
				err = cerr
			}
		}
	}
	if s.meta != nil {
		if cerr := s.meta.close(); err == nil {
			err = cerr
		}
	}
	s.recs = nil
	return err
}

func (s *Scheduler) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.broken
}

// grow makes room for the record of id.
func (s *Scheduler) grow(id uint32) error {
	need := int64(headerSize) + (int64(id)+1)*recordSize
	if need <= int64(len(s.statesF.data)) {
		return nil
	}
	err := s.statesF.ensure(need)
	s.recs = records(s.statesF.data)
	if s.statesF.data == nil {
		s.broken = fmt.Errorf("scheduler: %s lost its mapping after a failed grow: %w", s.statesF.path, err)
	}
	return err
}

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

func (s *Scheduler) host(name string) (uint32, error) {
	hash := HostHash(name)
	if h, ok := s.index.find(hash, name, s.hosts, s.names); ok {
		return h, nil
	}
	name = asciiLower(name)
	if h, ok := s.index.find(hash, name, s.hosts, s.names); ok {
		return h, nil
	}
	if err := checkHostName(name); err != nil {
		return 0, err
	}
	num := len(s.hosts)
	if uint64(num) >= 1<<32-1 {
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
	h := hostRec{hash: hash, nameOff: s.namesLen, nameLen: uint16(len(name))}
	s.namesLen += uint64(len(name))
	s.hosts = append(s.hosts, h)
	s.names = append(s.names, name)
	s.index.insert(uint32(num), s.hosts)
	s.phase = append(s.phase, uint16(h.hash%uint64(s.cfg.Phases)))
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

// Add records URL id of host at link depth as in-list, unless the id is
// known already, in which case it only lowers the stored depth. It reports
// whether the id was new.
func (s *Scheduler) Add(id uint32, host string, depth uint8) (bool, error) {
	return s.Mark(id, host, depth, InList)
}

// Mark is Add with another first state: Filtered or RobotsDenied for a URL
// the node will never fetch, Completed for one it fetched elsewhere.
func (s *Scheduler) Mark(id uint32, host string, depth uint8, st State) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return false, err
	}
	h, err := s.host(host)
	if err != nil {
		return false, err
	}
	return s.add(id, h, depth, st)
}

// AddHost is Add for a host number from Host, sparing the name lookup.
func (s *Scheduler) AddHost(id, host uint32, depth uint8) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return false, err
	}
	if host >= uint32(len(s.hosts)) {
		return false, fmt.Errorf("%w: %d", ErrUnknownHost, host)
	}
	return s.add(id, host, depth, InList)
}

func (s *Scheduler) add(id, h uint32, depth uint8, st State) (bool, error) {
	if st == Absent || st == InProgress || st >= numStates {
		return false, fmt.Errorf("scheduler: cannot add URL %d as %v", id, st)
	}
	if id == ^uint32(0) {
		return false, fmt.Errorf("scheduler: URL id %d out of range", id)
	}
	if uint64(id) < s.count {
		if r := s.recs[id]; r != 0 {
			if depth < r.depth() {
				s.recs[id] = makeRecord(id, r.state(), r.retries(), depth, r.host())
			}
			return false, nil
		}
	}
	if err := s.grow(id); err != nil {
		return false, err
	}
	s.recs[id] = makeRecord(id, st, 0, depth, h)
	s.count = max(s.count, uint64(id)+1)
	if st == InList {
		s.rt.added(s, id, h)
		s.wake()
	}
	s.counter.Added++
	return true, nil
}

// Depth returns the link depth stored for id (false if never added).
func (s *Scheduler) Depth(id uint32) (uint8, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil || uint64(id) >= s.count || s.recs[id] == 0 {
		return unknownDepth, false
	}
	return s.recs[id].depth(), true
}

// Lower stores depth d for id if it is smaller than the stored one and
// returns the previous depth and whether it changed; like scope.DepthStore
// but by id. An id never added is ErrUnknownURL: add it with its host.
func (s *Scheduler) Lower(id uint32, d uint8) (uint8, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return 0, false, err
	}
	if uint64(id) >= s.count || s.recs[id] == 0 {
		return unknownDepth, false, fmt.Errorf("%w: %d", ErrUnknownURL, id)
	}
	r := s.recs[id]
	if d >= r.depth() {
		return r.depth(), false, nil
	}
	s.recs[id] = makeRecord(id, r.state(), r.retries(), d, r.host())
	return r.depth(), true, nil
}

// URLInfo is what the scheduler stores about one URL.
type URLInfo struct {
	State   State
	Depth   uint8
	Retries uint8
	Host    uint32
}

// URL returns what is stored about id (State Absent if never added).
func (s *Scheduler) URL(id uint32) URLInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil || uint64(id) >= s.count {
		return URLInfo{}
	}
	r := s.recs[id]
	return URLInfo{State: r.state(), Depth: r.depth(), Retries: r.retries(), Host: r.host()}
}

// Len returns the highest id added + 1.
func (s *Scheduler) Len() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
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
	IP         netip.Addr
	Bucket     BucketState
}

// HostInfo returns what is stored about host h.
func (s *Scheduler) HostInfo(h uint32) (HostInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return HostInfo{}, err
	}
	if h >= uint32(len(s.hosts)) {
		return HostInfo{}, fmt.Errorf("%w: %d", ErrUnknownHost, h)
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
	if err := s.usable(); err != nil {
		return err
	}
	if h >= uint32(len(s.hosts)) {
		return fmt.Errorf("%w: %d", ErrUnknownHost, h)
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
	if err := s.usable(); err != nil {
		return false, err
	}
	if h >= uint32(len(s.hosts)) {
		return false, fmt.Errorf("%w: %d", ErrUnknownHost, h)
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
// kept in memory only.
func (s *Scheduler) SetIP(h uint32, ip netip.Addr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if h >= uint32(len(s.hosts)) {
		return fmt.Errorf("%w: %d", ErrUnknownHost, h)
	}
	s.rt.setIP(s, h, ip)
	return nil
}
