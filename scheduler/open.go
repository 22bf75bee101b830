package scheduler

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

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
		if err = s.adoptCheck(); err == nil {
			err = s.setID(s.cfg.TreeID)
		}
	}
	if err == nil {
		// Only once the files are known to be this tree's: a scheduler of
		// another data directory, refused, is left as it was.
		err = s.upgradeStates()
	}
	if err == nil && s.meta.last.flags&flagClean != 0 {
		// The clean mark is taken off before anything is written in
		// place (AdmitPage's counts, a URL's state): kept until the first
		// Sync, a kill -9 before it left those writes under the last
		// run's clean mark, and the next Open, trusting it, did not trim
		// the counts of URLs the crash lost (trimPages): a host's budget
		// spent on URLs it did not have, for good.
		c := s.meta.last
		c.flags &^= flagClean
		err = s.meta.write(c)
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
