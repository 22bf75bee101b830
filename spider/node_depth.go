package spider

import (
	"fmt"
	"hash/maphash"
	"strings"

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

	// seen caches the tree ids of URLs seen lately, direct-mapped by a
	// hash of the URL: pages repeat links the tree already holds (javadoc
	// pages hundreds of them), and a tree Find per sighting, which walks
	// and decompresses the tree's entries, was a third of a crawl's CPU,
	// all of it on the writer, the crawl's one serial goroutine. Tree ids
	// never change, so an entry is never stale; a URL the cache does not
	// hold is looked up in the tree. It starts small and doubles whenever
	// half its slots are taken, up to seenSlots: made at full size, it was
	// a tenth of the live heap of a small crawl.
	seen     []seenEntry
	seenUsed int // slots taken
	seenSeed maphash.Seed

	// later: lowered depths of fetched pages waiting for the next sync
	// (node_lower.go); laterIDs: those recorded since the last sync began.
	later    map[uint32]uint8
	laterIDs []laterLower
	outlinks map[uint32]pageLinks // the writer's, set by seeOne
}

// seenEntry is one URL of treeDepth's cache: its own copy, since the
// extractor's URLs share one string per page.
type seenEntry struct {
	u  string
	id uint32
}

// seenSlots is the largest size of treeDepth's cache (a power of 2):
// about 1 MB, plus the URLs; seenMinSlots its first.
const (
	seenSlots    = 1 << 15
	seenMinSlots = 1 << 10
)

// slot is u's entry in the cache, which it makes on first use.
func (s *treeDepth) slot(u string) *seenEntry {
	if s.seen == nil {
		s.seen, s.seenSeed = make([]seenEntry, seenMinSlots), maphash.MakeSeed()
	}
	return &s.seen[maphash.String(s.seenSeed, u)&uint64(len(s.seen)-1)]
}

// put fills e, u's slot, and grows the cache once half of it is taken (e
// is then stale).
func (s *treeDepth) put(e *seenEntry, u string, id uint32) {
	if e.u == "" {
		s.seenUsed++
	}
	e.u, e.id = strings.Clone(u), id
	if s.seenUsed <= len(s.seen)/2 || len(s.seen) >= seenSlots {
		return
	}
	old := s.seen
	s.seen, s.seenUsed = make([]seenEntry, 2*len(old)), 0
	for _, o := range old {
		if o.u != "" {
			n := s.slot(o.u)
			if n.u == "" {
				s.seenUsed++
			}
			*n = o
		}
	}
}

// find is tree.FindString through the cache.
func (s *treeDepth) find(u string) (uint32, bool) {
	e := s.slot(u)
	if e.u == u && u != "" {
		return e.id, true
	}
	id, ok := s.n.tree.FindString(u)
	if ok {
		s.put(e, u, id)
	}
	return id, ok
}

// remember caches u's id once the writer has added it to the tree.
func (s *treeDepth) remember(u string, id uint32) {
	if u != "" {
		s.put(s.slot(u), u, id)
	}
}

// Lower implements scope.DepthStore.
func (s *treeDepth) Lower(u string, d uint8) (uint8, bool) {
	s.id, s.inTree = s.find(u)
	s.known = false
	if !s.inTree {
		return scope.NoDepth, true
	}
	prev, ok := s.depthOf(s.id)
	if !ok {
		return scope.NoDepth, true
	}
	s.known = true
	if d >= prev {
		return prev, false
	}
	if s.linksSeen(s.id) {
		s.lowerLater(s.id, d) // after the re-expansion is durable
		return prev, true
	}
	if _, _, err := s.n.sched.Lower(s.id, d); err != nil {
		s.n.fail(fmt.Errorf("spider: scheduler lower %d (%s): %w", s.id, u, err))
		return prev, false
	}
	return prev, true
}
