package scheduler

// PhaseHosts returns the names of up to limit hosts of phase ph with URLs
// waiting (in a list or stalled), in the order a switch to ph queues them:
// the window scan from its start. It looks at no more than budget ids,
// holding the scheduler's lock meanwhile. A cluster node resolves these
// names shortly before its slot of ph begins, so that the slot's first
// lists do not wait for DNS.
func (s *Scheduler) PhaseHosts(ph, limit, budget int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.usable() != nil || ph < 0 || ph >= s.cfg.Phases || limit <= 0 {
		return nil
	}
	rt := &s.rt
	end := rt.windowEnd(s)
	var out []string
	seen := make(map[uint32]bool, limit)
	for id := rt.lo; id < end && budget > 0 && len(out) < limit; id++ {
		budget--
		r := s.recs[id]
		if st := r.state(); st != InList && st != Stalled {
			continue
		}
		if h := r.host(); int(s.phase[h]) == ph && !seen[h] {
			seen[h] = true
			out = append(out, s.names[h])
		}
	}
	return out
}
