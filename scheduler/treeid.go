package scheduler

import "fmt"

// checkID refuses files of another URL tree than Config.TreeID, or than
// the meta file's: a scheduler directory copied from another data
// directory, or one file of it, was read as this one's, its records
// naming other URLs. A meta file without an ID (before format version 3,
// or an upgrade a crash cut short: setID writes it last) tells nothing.
func (s *Scheduler) checkID() error {
	s.id = s.meta.id
	if s.id == ([16]byte{}) {
		return nil
	}
	if want := s.cfg.TreeID; want != ([16]byte{}) && want != s.id {
		return fmt.Errorf("%w: %s belongs to URL tree %x, but the scheduler is opened for tree %x: a scheduler directory of another data directory, or its URL tree was replaced; put back the directories that belong together, or move %s away for a new scheduler", ErrForeign, s.meta.path, s.id, want, s.dir)
	}
	for _, f := range []*mappedFile{s.statesF, s.hostsF, s.namesF} {
		if id := headerID(f.data); id != s.id {
			return foreign(f.path, id, s.meta.path, s.id)
		}
	}
	return nil
}

// setID records id in the files of a scheduler without one (from before
// format version 3, or created with no Config.TreeID): the array files
// first, the meta file last, so that a crash in between leaves a meta file
// without one, which the next Open with a TreeID upgrades again.
func (s *Scheduler) setID(id [16]byte) error {
	for _, f := range []struct {
		mf    *mappedFile
		magic [8]byte
	}{{s.statesF, magicStates}, {s.hostsF, magicHosts}, {s.namesF, magicNames}} {
		putHeader(f.mf.data, f.magic, id)
		if err := f.mf.sync(); err != nil {
			return err
		}
	}
	if err := s.meta.setID(id); err != nil {
		return err
	}
	s.id = id
	return nil
}
