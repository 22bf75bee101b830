package spider

import "fmt"

// A fetched page found shallower has its links followed again from the
// new depth (reexpand), and the URLs that adds are in the tree's unsynced
// tail until the writer's next sync. Lowered in the scheduler at once, the
// page's new depth was durable before them: the scheduler's records are
// written in place, and a kill -9 keeps them while the tree loses its
// tail. After the restart the page had its new depth and was stored, so
// nothing would see it shallower again or fetch it: the URLs its links
// reach only from the new depth were never crawled (the crash soak: a
// host's pages one level too deep, and those at the limit missing).
//
// So the new depth of a page whose links the writer has seen (in its
// outlinks, or fetched: completed, redirected, or stored before a crash,
// whose links reexpand reads back from the store) goes to the scheduler
// only once the sync that covers the re-expansion has succeeded. A page
// in outlinks counts too: it may be stored any moment, and a crash then
// leaves it stored, not to be fetched again (recover's n.stored). Until
// the sync the writer keeps the new depth in later; a crash before it
// leaves the old depth, and the page whose link lowered it, not stored
// either, is fetched again and lowers it again. A page whose links the
// writer has not seen is lowered at once: its fetch, or its links on
// their way, read the depth whatever a crash keeps.

// laterLower is a fetched page's lowered depth waiting for a sync.
type laterLower struct {
	id uint32
	d  uint8
}

// linksSeen reports whether the writer has seen id's links: they are in
// its outlinks, or they come from the store when it is re-expanded
// (fetched in this run or an earlier one, or stored before a crash).
func (s *treeDepth) linksSeen(id uint32) bool {
	if _, ok := s.outlinks[id]; ok {
		return true
	}
	return s.n.linksInStore(id)
}

// lowerLater records id's new depth d for after the next sync.
func (s *treeDepth) lowerLater(id uint32, d uint8) {
	if s.later == nil {
		s.later = map[uint32]uint8{}
	}
	s.later[id] = d
	s.laterIDs = append(s.laterIDs, laterLower{id, d})
}

// laterDepth is id's depth waiting for a sync, if any.
func (s *treeDepth) laterDepth(id uint32) (uint8, bool) {
	d, ok := s.later[id]
	return d, ok
}

// depthOf is id's depth as the writer knows it: the scheduler's, or a
// smaller one waiting for a sync.
func (s *treeDepth) depthOf(id uint32) (uint8, bool) {
	d, ok := s.n.sched.Depth(id)
	if l, ok2 := s.laterDepth(id); ok && ok2 && l < d {
		d = l
	}
	return d, ok
}

// takeLater hands over the depths recorded so far, for the sync about to
// start (it covers every re-expansion they come from).
func (s *treeDepth) takeLater() []laterLower {
	l := s.laterIDs
	s.laterIDs = nil
	return l
}

// applyLater writes the depths a succeeded sync covered to the scheduler.
func (s *treeDepth) applyLater(l []laterLower) {
	for _, x := range l {
		if _, _, err := s.n.sched.Lower(x.id, x.d); err != nil {
			s.n.fail(fmt.Errorf("spider: scheduler lower %d: %w", x.id, err))
			return
		}
		if s.later[x.id] == x.d {
			delete(s.later, x.id)
		}
	}
}
