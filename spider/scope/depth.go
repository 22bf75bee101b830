package scope

// DepthStore remembers, per URL, the smallest link depth it was seen at.
// The node backs it with the scheduler's per-URL depth (spider.treeDepth),
// so nothing is kept in memory per URL; the tests use an in-memory one.
// Implementations must make Lower atomic per URL.
type DepthStore interface {
	// Lower records that url was seen at depth d. If the URL is new, or d is
	// smaller than its stored depth, it stores d and returns the old depth
	// (NoDepth for a new URL) and true; otherwise it changes nothing and
	// returns the stored depth and false.
	Lower(url string, d uint8) (prev uint8, lowered bool)
}

// NoDepth is the depth of a URL never seen; depths at or above it are
// stored as NoDepth-1.
const NoDepth uint8 = 255

// MaxLimit is the largest Depth.Max: every depth from NoDepth-1 up is
// stored as NoDepth-1, which must stay beyond the limit; with a limit of
// NoDepth-1 a link 300 deep would count as NoDepth-1 and be crawled, the
// limit being none.
const MaxLimit = int(NoDepth) - 2

// Depth is the link depth limit: a URL is crawled when its shortest known
// link distance from a seed (seeds are depth 0) is at most Max.
type Depth struct {
	Max   int
	Store DepthStore
}

// Decision is what Depth.Seen tells the node to do with a URL.
type Decision struct {
	// Crawl: the URL is within the limit for the first time (new, or known
	// only beyond the limit so far); schedule it.
	Crawl bool
	// Reexpand: the URL was already admitted, at a larger depth; its links
	// count from the new Depth now. If the page was fetched already, the
	// node follows its links again (they may now be within the limit);
	// if not, the fetch will use the stored depth.
	Reexpand bool
	// Depth is the URL's depth after this sighting.
	Depth uint8
	// Reason is TooDeep when the URL is beyond the limit (its depth is
	// stored all the same, so a shorter path found later re-admits it), else
	// OK; OK with neither Crawl nor Reexpand means it was already known at a
	// depth no larger than this one: nothing to do.
	Reason Reason
}

// Seen records that url was found at depth d and says what to do about it.
func (l *Depth) Seen(url string, d int) Decision {
	dd := clampDepth(d)
	prev, lowered := l.Store.Lower(url, dd)
	if !lowered {
		return Decision{Depth: prev, Reason: OK}
	}
	if int(dd) > l.Max {
		return Decision{Depth: dd, Reason: TooDeep}
	}
	known := prev != NoDepth && int(prev) <= l.Max
	return Decision{Crawl: !known, Reexpand: known, Depth: dd, Reason: OK}
}

func clampDepth(d int) uint8 {
	switch {
	case d < 0:
		return 0
	case d >= int(NoDepth):
		return NoDepth - 1
	}
	return uint8(d)
}
