package scheduler

import "fmt"

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
func (s *Scheduler) Close() error { return s.close(flagClean) }

// CloseUnclean is Close without the clean mark: the next Open finds what a
// crash right after this sync leaves (Opened().Clean false). A user that
// has not yet settled what an unclean Open told it (a node's pages stored
// but not reported before the crash) closes so, to be told again: closed
// clean, it was not, and those pages were fetched and stored again.
func (s *Scheduler) CloseUnclean() error { return s.close(0) }

func (s *Scheduler) close(flags uint32) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var err error
	if s.broken == nil {
		if err = s.commit(flags); err == nil && flags&flagClean != 0 {
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
