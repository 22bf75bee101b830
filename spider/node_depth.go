package spider

import (
	"fmt"

	"github.com/kspider/kspider/spider/scope"
)

// treeDepth is the node's scope.DepthStore: a URL's depth is the one the
// scheduler stores for its URL tree id, so it is as durable as the URL
// itself and survives restarts, and the node keeps no per-URL map in
// memory. A URL not in the tree (or in the tree but lost by the scheduler
// in a crash) is new to it: its depth is stored when the writer adds it,
// and nothing is remembered of URLs the depth limit or the filters refused
// (a later sighting decides again, at its own depth).
//
// Only the writer goroutine uses it. Lower leaves the id it looked up in
// id/inTree/known for the writer's next step.
type treeDepth struct {
	n      *Node
	id     uint32
	inTree bool // id is u's tree id
	known  bool // and the scheduler has a record for it
}

// Lower implements scope.DepthStore.
func (s *treeDepth) Lower(u string, d uint8) (uint8, bool) {
	s.id, s.inTree = s.n.tree.FindString(u)
	s.known = false
	if !s.inTree {
		return scope.NoDepth, true
	}
	prev, ok := s.n.sched.Depth(s.id)
	if !ok {
		return scope.NoDepth, true
	}
	s.known = true
	if d >= prev {
		return prev, false
	}
	if _, _, err := s.n.sched.Lower(s.id, d); err != nil {
		s.n.fail(fmt.Errorf("spider: scheduler lower %d (%s): %w", s.id, u, err))
		return prev, false
	}
	return prev, true
}
