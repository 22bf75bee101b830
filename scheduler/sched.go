package scheduler

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Scheduler owns what a node knows about every URL id and every host, and
// hands out per-host lists of ids to fetch. All methods are safe for
// concurrent use; one mutex guards everything (a list of 20 ids costs one
// lock round for the take and one per report).
type Scheduler struct {
	mu     sync.Mutex
	syncMu sync.Mutex // one Sync or Close at a time; taken before mu
	synced struct {   // the commit the last Sync wrote (under syncMu)
		c  commit
		ok bool
	}
	cfg    Config
	dir    string
	id     [16]byte // the URL tree's, in every file's header
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
	states  [numStates]uint64 // URLs per state, for Stats (stats.go)
}

// OpenStats says what Open found.
type OpenStats struct {
	Created    bool   // a new, empty scheduler
	Clean      bool   // the last close was clean
	URLs       uint64 // state records (highest id + 1)
	Hosts      int    // host table entries
	InProgress int    // URLs turned back from in-progress to in-list
	Dropped    int    // unsynced URLs whose host did not survive a crash; the node must add them again
	TornHosts  int    // host records a crash left half rewritten, kept with their waits bounded (tornHost)
	Converted  bool   // a version 1 states file was brought to version 2 (gap records written)
	// PagesTrimmed counts hosts whose count of pages admitted (AdmitPage)
	// a crash left above the URLs they have: lowered to those (trimPages).
	PagesTrimmed int
	// PagesRaised counts torn host records (TornHosts) whose count of
	// pages admitted was below the URLs they have: raised to those, so
	// that a damaged count admits no page past the host's budget.
	PagesRaised int
	Took        time.Duration // time Open took
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
		if err := s.clearCreate(); err != nil {
			return nil, err
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

// clearCreate removes what a crash inside create left: files without a
// meta file (made last, complete or not at all: createMeta) that hold
// nothing but their headers. A kill -9 a few milliseconds into a node's
// first run left them, and Open refused the directory for good. A file
// holding more is a scheduler whose meta file was lost: never replaced.
func (s *Scheduler) clearCreate() error {
	for _, n := range []string{statesName, hostsName, namesName} {
		fi, err := os.Stat(s.path(n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s: not a regular file but a %v: move it away", ErrCorrupt, s.path(n), fi.Mode().Type())
		}
		if fi.Size() > minFileSize || !holdsNothing(s.path(n)) {
			return fmt.Errorf("%w: %s exists without %s", ErrCorrupt, s.path(n), metaName)
		}
	}
	for _, n := range []string{statesName, hostsName, namesName, metaName + newSuffix} {
		if err := os.Remove(s.path(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("scheduler: %w", err)
		}
	}
	return nil
}

// holdsNothing reports whether the small file at path has nothing after
// its header but zeros (a header not written yet counts as zeros).
func holdsNothing(path string) bool {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, minFileSize+1))
	if err != nil {
		return false
	}
	for _, c := range b[min(len(b), headerSize):] {
		if c != 0 {
			return false
		}
	}
	return true
}

func (s *Scheduler) create() error {
	var err error
	s.id = s.cfg.TreeID
	if s.statesF, err = createMapped(s.path(statesName), magicStates, s.id); err == nil {
		if s.hostsF, err = createMapped(s.path(hostsName), magicHosts, s.id); err == nil {
			if s.namesF, err = createMapped(s.path(namesName), magicNames, s.id); err == nil {
				if err = s.syncFiles(); err == nil {
					if s.meta, err = createMeta(s.path(metaName), s.id); err == nil {
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
	c := s.meta.last
	if s.statesF, err = openMapped(s.path(statesName), magicStates, span(c.urls, recordSize)); err == nil {
		if s.hostsF, err = openMapped(s.path(hostsName), magicHosts, span(c.hosts, hostRecSize)); err == nil {
			s.namesF, err = openMapped(s.path(namesName), magicNames, span(c.names, 1))
		}
	}
	if err == nil {
		err = s.checkID()
	}
	if err == nil {
		err = s.load()
	}
	if err == nil && s.id == ([16]byte{}) && s.cfg.TreeID != ([16]byte{}) {
		err = s.setID(s.cfg.TreeID)
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
	hs, err := decodeHosts(s.hostsF.path, s.namesF.path, s.hostsF.data, s.namesF.data, c.hosts, c.names, c.flags&flagClean != 0, nil)
	if err != nil {
		return err
	}
	s.hosts, s.names, s.index, s.namesLen = hs.recs, hs.names, hs.index, hs.namesLen
	for _, h := range hs.torn {
		s.putHost(h) // a valid checksum again; durable at the next Sync
	}
	s.opened.TornHosts = len(hs.torn)
	s.recs = records(s.statesF.data)
	version := headerVersion(s.statesF.data)
	ss, err := decodeStates(s.statesF.path, version, scanRecords(s.recs, c.urls, s.statesF.dataEnd), c.urls, uint32(len(s.hosts)), nil)
	if err != nil {
		return err
	}
	if lim := s.cfg.URLLimit; (lim > 0 || s.cfg.LimitURLs) && ss.count > lim {
		keep := max(lim, c.urls) // committed records are never dropped
		for i := keep; i < ss.count; i++ {
			if s.recs[i].added() {
				ss.dropped++
			}
			s.recs[i] = 0
		}
		ss.count = min(ss.count, keep)
	}
	s.count = ss.count
	if version < 2 {
		if err := s.convertStates(); err != nil {
			return err
		}
	}
	s.countStates()
	s.opened.Clean = c.flags&flagClean != 0
	if !s.opened.Clean {
		s.opened.PagesTrimmed, s.opened.PagesRaised = s.trimPages(hs.torn)
	}
	s.opened.InProgress, s.opened.Dropped = ss.inProgress, ss.dropped
	s.phase = make([]uint16, len(s.hosts))
	for i := range s.hosts {
		s.phase[i] = s.phaseOf(s.hosts[i].hash, s.names[i])
	}
	s.runIdx = make([]int32, len(s.hosts))
	return nil
}

// trimPages lowers each host's count of pages admitted to the URLs it has
// after an unclean stop. AdmitPage counts in the host's record, written in
// place, which a kill -9 keeps, while the URLs admitted since the node's
// last sync are lost with its URL tree (URLLimit): found again, they were
// counted again, and every crash took a few pages from the host's budget
// for good. It raises no count of a record that verifies (URLs added with
// no budget are not charged after the fact), but it sets that of a torn
// record (tornHost) to its URLs: its count may be anything on a damaged
// disk, and one lowered by a flipped bit admitted pages past the host's
// budget. It returns the hosts it lowered and those it raised.
func (s *Scheduler) trimPages(torn []uint32) (trimmed, raised int) {
	urls := make([]uint32, len(s.hosts))
	for _, r := range s.recs[:s.count] {
		if r.added() && int(r.host()) < len(urls) {
			urls[r.host()]++
		}
	}
	for h := range s.hosts {
		if s.hosts[h].pages > urls[h] {
			s.hosts[h].pages = urls[h]
			s.putHost(uint32(h)) // durable at the next Sync
			trimmed++
		}
	}
	for _, h := range torn {
		if s.hosts[h].pages < urls[h] {
			s.hosts[h].pages = urls[h]
			s.putHost(h)
			raised++
		}
	}
	return trimmed, raised
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
//
// The fdatasyncs run without s.mu (they took 30 ms on average, up to 160,
// on a busy disk, and every Next, Report and Add waited on them): the
// commit is taken under the lock, so it covers only what was written
// before; what changes while the files are written back may reach the disk
// too, as it may at any time through the kernel's own writeback, and Open
// already trusts nothing past the commit. syncMu keeps one Sync (or Close)
// at a time on the meta file.
func (s *Scheduler) Sync() error { return s.SyncUpTo(^uint64(0)) }

// SyncUpTo is Sync committing at most the URL ids below urls: a node whose
// URL tree is synced up to urls while ids past it are being added (to the
// tree, then here) commits no id the tree's commit lacks. The records past
// the commit are written back all the same; Open keeps those the tree
// still has (Config.URLLimit).
func (s *Scheduler) SyncUpTo(urls uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	c := s.commitRecord(0)
	c.urls = min(c.urls, urls)
	files := []*mappedFile{s.namesF, s.hostsF, s.statesF}
	s.mu.Unlock()
	if s.synced.ok && c.names == s.synced.c.names {
		// The names file is only appended to: nothing new to write back.
		files = files[1:]
	}
	for _, f := range files {
		if err := f.sync(); err != nil {
			return err
		}
	}
	if s.synced.ok && c == s.synced.c {
		// States and hosts change in place, and are written back above;
		// the commit, how much of each file to trust, is the same.
		return nil
	}
	if err := s.meta.write(c); err != nil {
		return err
	}
	s.synced.c, s.synced.ok = c, true
	return nil
}

// commitRecord is the commit of the tables as they are now (s.mu held).
func (s *Scheduler) commitRecord(flags uint32) commit {
	return commit{urls: s.count, hosts: uint64(len(s.hosts)), names: s.namesLen, flags: flags}
}

func (s *Scheduler) commit(flags uint32) error {
	if err := s.syncFiles(); err != nil {
		return err
	}
	return s.meta.write(s.commitRecord(flags))
}

// Close syncs with a clean mark and releases the files. URLs in lists
// still out stay in progress on disk and are in-list again at the next Open.
func (s *Scheduler) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
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

// usableHost is usable, and h a host in the table.
func (s *Scheduler) usableHost(h uint32) error {
	if err := s.usable(); err != nil {
		return err
	}
	if h >= uint32(len(s.hosts)) {
		return fmt.Errorf("%w: %d", ErrUnknownHost, h)
	}
	return nil
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

// maxIDGap bounds how far past the highest id an Add may reach: ids are
// dense, and a wild one would make the state file reserve disk for every
// id below it.
const maxIDGap = 1 << 20

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
	if err := s.usableHost(host); err != nil {
		return false, err
	}
	return s.add(id, host, depth, InList)
}

func (s *Scheduler) add(id, h uint32, depth uint8, st State) (bool, error) {
	if st == Absent || st == InProgress || st >= numStates {
		return false, fmt.Errorf("scheduler: cannot add URL %d as %v", id, st)
	}
	if id == ^uint32(0) || uint64(id) > s.count+maxIDGap {
		return false, fmt.Errorf("%w: URL id %d is far past the last one (%d); ids are the URL tree's dense ids", ErrBadID, id, s.count)
	}
	if uint64(id) < s.count {
		if r := s.recs[id]; r.added() {
			if depth < r.depth() {
				s.recs[id] = makeRecord(id, r.state(), r.retries(), depth, r.host())
			}
			return false, nil
		}
	}
	if err := s.grow(id); err != nil {
		return false, err
	}
	for gap := s.count; gap < uint64(id); gap++ {
		s.recs[gap] = gapRecord(uint32(gap)) // never a zero record below the highest id
	}
	s.recs[id] = makeRecord(id, st, 0, depth, h)
	s.states[st]++
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
	if s.usable() != nil || uint64(id) >= s.count || !s.recs[id].added() {
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
	if uint64(id) >= s.count || !s.recs[id].added() {
		return unknownDepth, false, fmt.Errorf("%w: %d", ErrUnknownURL, id)
	}
	r := s.recs[id]
	if d >= r.depth() {
		return r.depth(), false, nil
	}
	s.recs[id] = makeRecord(id, r.state(), r.retries(), d, r.host())
	return r.depth(), true, nil
}

// Requeue puts id back in the list if it is Filtered (dropped before any
// fetch), as if just added, at its stored depth; any other state is left
// as it is. The node drops a URL queued before limits.max_depth was
// lowered, and queues it again when the limit is raised or the URL is
// found within it: Filtered is otherwise final, and the URL was lost. It
// reports whether id was requeued.
func (s *Scheduler) Requeue(id uint32) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return false, err
	}
	if uint64(id) >= s.count || !s.recs[id].added() {
		return false, fmt.Errorf("%w: %d", ErrUnknownURL, id)
	}
	r := s.recs[id]
	if r.state() != Filtered {
		return false, nil
	}
	s.recs[id] = r.with(id, InList, 0)
	s.states[Filtered]--
	s.states[InList]++
	s.rt.added(s, id, r.host())
	s.wake()
	return true, nil
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
	if !r.added() {
		return URLInfo{} // a gap: never added
	}
	return URLInfo{State: r.state(), Depth: r.depth(), Retries: r.retries(), Host: r.host()}
}

// Len returns the highest id added + 1.
func (s *Scheduler) Len() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}
