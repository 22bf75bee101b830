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

// adoptSamples bounds the records adoptCheck compares with the tree: a
// scheduler of another tree differs at nearly every id, and a check of
// every one would cost a tree lookup per URL at the upgrade.
const adoptSamples = 4096

// adoptCheck compares records of a scheduler without an ID with the
// tree's URLs (sampleHosts) before setID gives it the tree's ID. Such a
// scheduler (from before format version 3) copied from another data
// directory was given this tree's ID and read as its own, its records
// naming other URLs: lists went out under one host holding URLs of
// others, and URLs it said were done were never fetched.
func (s *Scheduler) adoptCheck() error {
	if s.cfg.HostOf == nil {
		return nil
	}
	return sampleHosts(s.recs, s.count, s.names, s.cfg.HostOf, s.meta.path, s.dir)
}

// sampleHosts compares the records of the first count ids of recs, up to
// adoptSamples of them spread evenly and the last, with the URLs the
// tree has at those ids (Config.HostOf): a record whose host (by names)
// is another than the tree's URL's is of another data directory, an
// ErrForeign error naming meta and dir. So is a scheduler none of whose
// records sampled the tree has a URL for (a new or emptied tree): the
// tree cannot vouch for it, and taking it gave the tree's ID to another
// data directory's scheduler beside a new tree, the node then crawling
// with its URL states. Open's adoptCheck and CheckFor both use it, so
// that check says ok of what Open takes. A record that does not verify,
// or names no host of names, is not compared: the decoders report it
// (Check) or refused it first (Open).
func sampleHosts(recs []record, count uint64, names []string, hostOf func(uint32) (string, bool), meta, dir string) error {
	count = min(count, uint64(len(recs)))
	if count == 0 {
		return nil
	}
	var compared, unknown int
	sample := func(id uint32) error {
		known, err := sampleHost(recs, id, names, hostOf, meta, dir)
		switch {
		case err != nil:
			return err
		case known == sampleCompared:
			compared++
		case known == sampleUnknown:
			unknown++
		}
		return nil
	}
	step := max(1, count/adoptSamples)
	for id := uint64(0); id < count; id += step {
		if err := sample(uint32(id)); err != nil {
			return err
		}
	}
	if (count-1)%step != 0 {
		if err := sample(uint32(count - 1)); err != nil {
			return err
		}
	}
	if compared == 0 && unknown > 0 {
		return fmt.Errorf("%w: %s records no URL tree (written before format version 3, or with none), and the URL tree has no URL at any of the %d of its URL ids looked at (%d URL records; a new or emptied tree): it cannot be this tree's scheduler; move %s away for a new scheduler, or put back the URL tree it belongs to", ErrForeign, meta, unknown, count, dir)
	}
	return nil
}

// What sampleHost found of a record.
const (
	sampleSkipped  = iota // not compared: no record, or one the decoders refuse
	sampleUnknown         // the tree has no URL at its id (HostOf false)
	sampleCompared        // the tree's URL is of the record's host
)

func sampleHost(recs []record, id uint32, names []string, hostOf func(uint32) (string, bool), meta, dir string) (int, error) {
	r := recs[id]
	if !r.added() || checkRecord(id, r) != nil || r.host() >= uint32(len(names)) {
		return sampleSkipped, nil
	}
	have := names[r.host()]
	want, ok := hostOf(id)
	if !ok {
		return sampleUnknown, nil // an entry a repair lost, an id the tree lacks
	}
	if asciiLower(want) == have {
		return sampleCompared, nil
	}
	return 0, fmt.Errorf("%w: %s records no URL tree (written before format version 3, or with none), and its URL %d is of host %q, but the URL tree's URL %d is of host %q: a scheduler directory of another data directory; put back the directories that belong together, or move %s away for a new scheduler", ErrForeign, meta, id, have, id, want, dir)
}
