package scheduler

import (
	"fmt"
	"time"
)

// Stats is the scheduler's figures for a node's status page: URLs per
// state, the window and the buckets' occupancy. Taking it holds the
// scheduler's lock for one pass over the hosts with runtime state (those
// with work in the window, a list out or a politeness wait), never over
// the URLs.
type Stats struct {
	States [numStates]uint64 // URLs per State (index); Absent stays 0

	WindowSize  int    // Config.Window
	WindowLo    uint64 // oldest id that may be unfinished
	WindowScan  uint64 // next id the window scan looks at
	WindowEnd   uint64 // one past the last id the window covers
	Rows        int    // bucket rows in all: Columns × Rows
	RowsUsed    int    // rows held by hosts (QUEUING, FETCHING, TIMEWAIT)
	Buckets     [4]int // hosts with runtime state per BucketState
	Ready       int    // hosts whose list may go out now
	Out         int    // ids handed out and not reported
	IPBlocked   int    // hosts waiting for their IP address's fetch count to drop
	TopQueued   []HostQueue
	HostsInView int // hosts with runtime state
}

// HostQueue is a host and the ids it has queued in the window.
type HostQueue struct {
	Name   string
	Queued int
}

// NumStates is the number of URL states, the length of Stats.States.
const NumStates = int(numStates)

// Stats returns the scheduler's figures, with the topK hosts with the most
// ids queued (topK ≤ 0: none). The top is kept in a bounded array while
// the hosts are passed, not sorted whole.
func (s *Scheduler) Stats(topK int) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := &s.rt
	st := Stats{States: s.states, WindowSize: s.cfg.Window, WindowLo: rt.lo, WindowScan: rt.scan,
		Rows: s.cfg.Columns * s.cfg.Rows, Ready: rt.ready.len(), Out: rt.out}
	if s.closed || s.recs == nil {
		return st
	}
	st.WindowEnd = rt.windowEnd(s)
	for _, u := range rt.colUsed {
		st.RowsUsed += int(u)
	}
	// No more room than there are hosts in view: Stats(math.MaxInt)
	// panicked ("makeslice: cap out of range").
	top := make([]HostQueue, 0, min(max(topK, 0), len(rt.runs)))
	free := len(rt.free)
	st.HostsInView = len(rt.runs) - free
	for i := range rt.runs {
		r := &rt.runs[i]
		if s.runIdx == nil || int(r.host) >= len(s.runIdx) || s.runIdx[r.host] != int32(i)+1 {
			continue // a free element
		}
		if int(r.state) < len(st.Buckets) {
			st.Buckets[r.state]++
		}
		if r.blocked {
			st.IPBlocked++
		}
		q := r.queued()
		if topK <= 0 || q == 0 {
			continue
		}
		if len(top) < topK {
			top = append(top, HostQueue{Name: s.names[r.host], Queued: q})
			siftUp(top, len(top)-1)
		} else if q > top[0].Queued {
			top[0] = HostQueue{Name: s.names[r.host], Queued: q}
			siftDown(top, 0)
		}
	}
	// Largest first: pop the min-heap from the back.
	for end := len(top) - 1; end > 0; end-- {
		top[0], top[end] = top[end], top[0]
		siftDown(top[:end], 0)
	}
	st.TopQueued = top
	return st
}

// siftUp and siftDown keep h a min-heap on Queued.
func siftUp(h []HostQueue, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].Queued <= h[i].Queued {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []HostQueue, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].Queued < h[l].Queued {
			m = r
		}
		if h[i].Queued <= h[m].Queued {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// StateName is the name of URL state i of Stats.States ("in-list", ...).
func StateName(i int) string { return State(i).String() }

// countStates counts the URLs per state; Open calls it once, after which
// every state change keeps the counts.
func (s *Scheduler) countStates() {
	s.states = [numStates]uint64{}
	for _, r := range s.recs[:s.count] {
		if r.added() { // not a gap record (states format 2)
			s.states[r.state()]++
		}
	}
}

// SetMinDelay changes the politeness wait after each list (Config.MinDelay).
// A lower one also cuts the waits running to what the config now imposes
// on each host (hostWait): applied only to the lists that ended from then
// on, a delay lowered from an hour left the hosts that had just fetched
// waiting out the hour, each holding its row.
func (s *Scheduler) SetMinDelay(d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("scheduler: politeness delay %v outside 0 to %v", d, MaxDelay)
	}
	now := s.cfg.Clock.Phase().Now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	lower := d < s.cfg.MinDelay
	s.cfg.MinDelay = d
	if lower && s.usable() == nil {
		s.rt.cutWaits(s, now)
		s.wake()
	}
	return nil
}

// MinDelay returns the politeness wait after each list.
func (s *Scheduler) MinDelay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.MinDelay
}
