package scheduler

// AddRedirect is Add for the target of a redirect, hops the redirects in
// a row that led to it (at most MaxHops are stored): the count goes with
// the URL's record and so survives a restart, however the node stops. A
// URL already added keeps its count.
func (s *Scheduler) AddRedirect(id uint32, host string, depth, hops uint8) (bool, error) {
	return s.addNamed(id, host, depth, hops, InList)
}

// Hops returns the redirects in a row that led to id (0 for a URL found by
// a link or a seed, or never added).
func (s *Scheduler) Hops(id uint32) uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil || uint64(id) >= s.count || !s.recs[id].added() {
		return 0
	}
	return s.recs[id].hops()
}

// upgradeStates gives a states file of a format version before 4 the
// version 4 header before any record with hops is written, so that a
// build of before reads no hops as host bits: it refuses the file as of a
// newer format.
func (s *Scheduler) upgradeStates() error {
	if headerVersion(s.statesF.data) >= FormatVersion {
		return nil
	}
	putHeader(s.statesF.data, magicStates, headerID(s.statesF.data))
	return s.statesF.sync()
}
