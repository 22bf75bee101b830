package scheduler

import "fmt"

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
	return s.addNamed(id, host, depth, 0, st)
}

// addNamed is add for a host by name (Mark, AddRedirect).
func (s *Scheduler) addNamed(id uint32, host string, depth, hops uint8, st State) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return false, err
	}
	h, err := s.host(host)
	if err != nil {
		return false, err
	}
	return s.add(id, h, depth, hops, st)
}

// AddHost is Add for a host number from Host, sparing the name lookup.
func (s *Scheduler) AddHost(id, host uint32, depth uint8) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableHost(host); err != nil {
		return false, err
	}
	return s.add(id, host, depth, 0, InList)
}

func (s *Scheduler) add(id, h uint32, depth, hops uint8, st State) (bool, error) {
	if st == Absent || st == InProgress || st >= numStates {
		return false, fmt.Errorf("scheduler: cannot add URL %d as %v", id, st)
	}
	if id == ^uint32(0) || uint64(id) > s.count+maxIDGap {
		return false, fmt.Errorf("%w: URL id %d is far past the last one (%d); ids are the URL tree's dense ids", ErrBadID, id, s.count)
	}
	if uint64(id) < s.count {
		if r := s.recs[id]; r.added() {
			if depth < r.depth() {
				s.recs[id] = r.withDepth(id, depth)
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
	s.recs[id] = makeRecord(id, st, 0, depth, h).withHops(id, hops)
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
	s.recs[id] = r.withDepth(id, d)
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
