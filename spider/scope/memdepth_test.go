package scope

import "sync"

// MemDepth is an in-memory DepthStore, safe for concurrent use: the
// tests' stand-in for the node's, which lives in the scheduler.
type MemDepth struct {
	mu sync.Mutex
	m  map[string]uint8
}

// NewMemDepth returns an empty MemDepth.
func NewMemDepth() *MemDepth { return &MemDepth{m: map[string]uint8{}} }

// Lower implements DepthStore.
func (s *MemDepth) Lower(url string, d uint8) (uint8, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.m[url]
	if ok && prev <= d {
		return prev, false
	}
	s.m[url] = d
	if !ok {
		return NoDepth, true
	}
	return prev, true
}

// Get returns the stored depth of url, NoDepth when never seen.
func (s *MemDepth) Get(url string) uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[url]; ok {
		return d
	}
	return NoDepth
}
