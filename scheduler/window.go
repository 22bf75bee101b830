package scheduler

import (
	"hash/maphash"
	"net/netip"
	"time"
)

// windowState is the scheduler's in-memory part: the sliding window, the
// bucket elements of hosts with work, the ready queue and the timers. None
// of it is stored; Open rebuilds it by scanning the window afresh.
type windowState struct {
	started bool  // a phase has been seen
	active  int   // the active phase
	slot    int64 // its slot

	lo   uint64 // oldest id that may be unfinished
	scan uint64 // next id the window scan looks at

	runs    []hostRun
	free    []int32
	ready   fifo // QUEUING hosts whose list may go out
	queuing fifo // hosts that entered QUEUING, for the flush when the scan is done
	events  eventHeap

	// colSeed keys the hash a host's column is taken from: HostHash is
	// the same for everybody, so a hostile web could name its hosts to
	// all take one column, whose Rows rows they then held between them
	// while the column's other hosts waited behind them all. The columns
	// live in memory only, so the seed is never stored.
	colSeed maphash.Seed
	colUsed []uint8 // rows taken per column
	colHead []int32 // wait list per column, -1 = empty
	colTail []int32

	ipOf   map[uint32]netip.Addr
	ipKeep int // ipOf is swept past this many, or twice the hosts with elements
	ipBusy map[netip.Addr]int32
	ipWait map[netip.Addr][]runRef

	out     int   // ids handed out and not reported
	lastNow int64 // the latest time the clock gave, Unix ns (observe)
}

func (rt *windowState) init(s *Scheduler) {
	n := s.cfg.Columns
	rt.colSeed = maphash.MakeSeed()
	rt.colUsed = make([]uint8, n)
	rt.colHead = make([]int32, n)
	rt.colTail = make([]int32, n)
	for i := range rt.colHead {
		rt.colHead[i], rt.colTail[i] = -1, -1
	}
	rt.ipOf = map[uint32]netip.Addr{}
	rt.ipKeep = ipKeep
	rt.ipBusy = map[netip.Addr]int32{}
	rt.ipWait = map[netip.Addr][]runRef{}
	rt.advanceLo(s)
}

// windowEnd is one past the last id the window covers.
func (rt *windowState) windowEnd(s *Scheduler) uint64 {
	return min(rt.lo+uint64(s.cfg.Window), s.count)
}

// scanned reports whether the scan has covered the whole window: partial
// lists need wait no longer, the window has nothing more for them.
func (rt *windowState) scanned(s *Scheduler) bool { return rt.scan >= rt.windowEnd(s) }

// advanceLo moves the window's start past finished ids.
func (rt *windowState) advanceLo(s *Scheduler) {
	for rt.lo < s.count && !s.recs[rt.lo].state().Unfinished() {
		rt.lo++
	}
	rt.scan = max(rt.scan, rt.lo)
}

// run returns host h's element, making one if it has none.
func (rt *windowState) run(s *Scheduler, h uint32) int32 {
	if i := s.runIdx[h]; i != 0 {
		return i - 1
	}
	var idx int32
	if n := len(rt.free); n > 0 {
		idx = rt.free[n-1]
		rt.free = rt.free[:n-1]
	} else {
		rt.runs = append(rt.runs, hostRun{})
		idx = int32(len(rt.runs) - 1)
	}
	r := &rt.runs[idx]
	gen := r.gen + 1
	*r = hostRun{host: h, gen: gen, col: int32(maphash.String(rt.colSeed, s.names[h]) % uint64(s.cfg.Columns)), waitNext: -1, pending: r.pending[:0], inflight: r.inflight[:0]}
	s.runIdx[h] = idx + 1
	return idx
}

// release returns an idle element to the free list.
func (rt *windowState) maybeFree(s *Scheduler, idx int32) {
	r := &rt.runs[idx]
	if r.state != Free || r.slotted || r.waiting || r.queued() > 0 || len(r.inflight) > 0 || r.released > 0 {
		return
	}
	s.runIdx[r.host] = 0
	if cap(r.pending) > 256 {
		r.pending = nil
	}
	r.gen++
	rt.free = append(rt.free, idx)
}

func (rt *windowState) ref(idx int32) runRef {
	r := &rt.runs[idx]
	return runRef{idx, r.gen, r.ep}
}

// added is told of a new in-list id: the scan finds it later unless it
// lies behind the scan already.
func (rt *windowState) added(s *Scheduler, id, h uint32) {
	if uint64(id) < rt.lo {
		rt.lo = uint64(id)
	}
	rt.requeue(s, id, h)
}

// requeue queues an in-list id behind the scan at its host, if the host is
// of the active phase (else the scan of its phase finds it). The caller
// wakes Next.
func (rt *windowState) requeue(s *Scheduler, id, h uint32) {
	if !rt.started || uint64(id) >= rt.scan || int(s.phase[h]) != rt.active {
		return
	}
	rt.push(s, h, id, rt.lastNow)
}

// push queues id at host h and moves the host's element on if it can.
func (rt *windowState) push(s *Scheduler, h, id uint32, now int64) {
	idx := rt.run(s, h)
	r := &rt.runs[idx]
	r.pending = append(r.pending, id)
	switch r.state {
	case Free:
		if !r.waiting {
			rt.acquire(s, idx, now)
		}
	case Queuing:
		if !r.ready && !r.blocked && r.queued() >= s.cfg.ListLen {
			rt.markReady(idx)
		}
	}
}

// acquire gives a FREE host with ids a row of its column, or puts it on
// the column's wait list.
func (rt *windowState) acquire(s *Scheduler, idx int32, now int64) {
	r := &rt.runs[idx]
	c := int(r.col)
	if int(rt.colUsed[c]) >= s.cfg.Rows {
		r.waiting, r.waitNext = true, -1
		if rt.colTail[c] < 0 {
			rt.colHead[c] = idx
		} else {
			rt.runs[rt.colTail[c]].waitNext = idx
		}
		rt.colTail[c] = idx
		return
	}
	rt.colUsed[c]++
	r.slotted = true
	rt.startQueuing(s, idx, now)
}

// startQueuing moves a slotted element to QUEUING, or to TIMEWAIT first if
// its host may not start yet (a wait stored before a restart).
func (rt *windowState) startQueuing(s *Scheduler, idx int32, now int64) {
	r := &rt.runs[idx]
	if next := s.hostWait(r.host, now); next > now {
		r.state, r.until = TimeWait, next
		rt.events.add(event{at: next, ref: rt.ref(idx), tw: true})
		return
	}
	r.state = Queuing
	r.ep++
	r.blocked = false
	ref := rt.ref(idx)
	if r.queued() >= s.cfg.ListLen || rt.scanned(s) {
		rt.markReady(idx)
		return
	}
	rt.queuing.push(ref)
	rt.events.add(event{at: now + int64(s.cfg.PartialWait), ref: ref})
}

func (rt *windowState) markReady(idx int32) {
	r := &rt.runs[idx]
	r.ready = true
	rt.ready.push(rt.ref(idx))
}

// releaseRow gives up idx's row and passes it to the first waiter.
func (rt *windowState) releaseRow(s *Scheduler, idx int32, now int64) {
	r := &rt.runs[idx]
	if !r.slotted {
		return
	}
	r.slotted = false
	c := int(r.col)
	rt.colUsed[c]--
	if w := rt.colHead[c]; w >= 0 {
		wr := &rt.runs[w]
		rt.colHead[c] = wr.waitNext
		if rt.colHead[c] < 0 {
			rt.colTail[c] = -1
		}
		wr.waiting, wr.waitNext = false, -1
		rt.acquire(s, w, now)
	}
}

// timewaitOver ends idx's TIMEWAIT: it keeps its row for more ids unless
// other hosts wait for the row.
func (rt *windowState) timewaitOver(s *Scheduler, idx int32, now int64) {
	r := &rt.runs[idx]
	r.state = Free
	if r.queued() > 0 && rt.colHead[int(r.col)] < 0 {
		rt.startQueuing(s, idx, now)
		return
	}
	rt.releaseRow(s, idx, now)
	r = &rt.runs[idx]
	if r.queued() > 0 {
		rt.acquire(s, idx, now)
	}
	rt.maybeFree(s, idx)
}

// clockStepBack is how far the clock may go back before the timers in
// memory are cut (clockBack): an NTP-corrected clock moves back by
// milliseconds now and then, which lengthens a wait by as much.
const clockStepBack = int64(time.Second)

// observe records now, the clock's latest time, and cuts the timers when
// the clock went back.
func (rt *windowState) observe(s *Scheduler, now int64) {
	if now < rt.lastNow-clockStepBack {
		rt.clockBack(s, now)
		rt.lastNow = now
		return
	}
	rt.lastNow = max(rt.lastNow, now)
}

// clockBack cuts the timers in memory after the clock went back, as Open
// cuts the waits stored (hostWait): a run whose clock was ahead and was
// set right put its hosts in TIMEWAIT until a time as far ahead, years
// for a clock set wrong, each holding its row all the while. A TIMEWAIT
// ends at the latest the wait the config imposes on its host from now (the
// host's stored wait cut with it), a partial list's wait PartialWait from
// now. The heap is built anew: the old events would stay until their time.
func (rt *windowState) clockBack(s *Scheduler, now int64) {
	rt.events = rt.events[:0]
	for i := range rt.runs {
		r := &rt.runs[i]
		if s.runIdx[r.host] != int32(i)+1 {
			continue // on the free list
		}
		ref := rt.ref(int32(i))
		switch {
		case r.state == TimeWait:
			r.until = min(r.until, s.hostWait(r.host, now))
			rt.events.add(event{at: r.until, ref: ref, tw: true})
		case r.state == Queuing && !r.ready && !r.blocked:
			rt.events.add(event{at: now + int64(s.cfg.PartialWait), ref: ref})
		}
	}
}

// cutWaits cuts every TIMEWAIT to the wait the config imposes on its host
// from now (hostWait), the politeness delay having been lowered. The
// timers replaced are taken out of the heap at once: left there until
// their time, up to MaxDelay away, every lowering of the delay added one
// per host waiting, and a script lowering it step by step piled them up.
func (rt *windowState) cutWaits(s *Scheduler, now int64) {
	cut := false
	for i := range rt.runs {
		r := &rt.runs[i]
		if s.runIdx[r.host] != int32(i)+1 || r.state != TimeWait {
			continue // on the free list, or not waiting
		}
		if until := s.hostWait(r.host, now); until < r.until {
			r.until = until
			rt.events = append(rt.events, event{at: until, ref: rt.ref(int32(i)), tw: true})
			cut = true
		}
	}
	if !cut {
		return
	}
	live := rt.events[:0]
	for _, e := range rt.events {
		if rt.current(e) {
			live = append(live, e)
		}
	}
	clear(rt.events[len(live):])
	rt.events = live
	rt.events.heapify()
}

// current reports whether e is still the timer of its element: an element
// reused for another host, a TIMEWAIT cut or over, a list gone out or a
// QUEUING entered anew leave their timers stale, skipped when they fire.
func (rt *windowState) current(e event) bool {
	r := &rt.runs[e.ref.idx]
	if r.gen != e.ref.gen {
		return false
	}
	if e.tw {
		return r.state == TimeWait && r.until == e.at
	}
	return r.state == Queuing && r.ep == e.ref.ep && !r.ready && !r.blocked
}

// fire runs the timers due at now.
func (rt *windowState) fire(s *Scheduler, now int64) {
	for {
		e, ok := rt.events.next()
		if !ok || e.at > now {
			return
		}
		rt.events.drop()
		if !rt.current(e) {
			continue
		}
		if e.tw {
			rt.timewaitOver(s, e.ref.idx, now)
		} else {
			rt.markReady(e.ref.idx)
		}
	}
}

// switchPhase drops every queued id and QUEUING element of the old phase;
// lists out stay out until reported, and TIMEWAITs run on. The scan starts
// again from the window's start.
func (rt *windowState) switchPhase(s *Scheduler, p Phase) {
	rt.started, rt.active, rt.slot = true, p.Active, p.Slot
	rt.ready.reset()
	rt.queuing.reset()
	for c := range rt.colHead {
		rt.colHead[c], rt.colTail[c] = -1, -1
	}
	clear(rt.ipWait)
	for i := range rt.runs {
		r := &rt.runs[i]
		if s.runIdx[r.host] != int32(i)+1 {
			continue // on the free list
		}
		r.pending, r.head = r.pending[:0], 0
		r.ready, r.blocked, r.waiting = false, false, false
		if r.state == Queuing {
			r.state = Free
			r.slotted = false
			rt.colUsed[int(r.col)]--
		}
		rt.maybeFree(s, int32(i))
	}
	rt.scan = rt.lo
}

// scanSome moves the scan over up to budget ids of the window, queuing the
// in-list ones of the active phase at their hosts.
func (rt *windowState) scanSome(s *Scheduler, budget int, now int64) {
	end := rt.windowEnd(s)
	active := uint16(rt.active)
	for rt.scan < end && budget > 0 {
		id := rt.scan
		rt.scan++
		budget--
		r := s.recs[id]
		if st := r.state(); st != InList && st != Stalled {
			continue
		}
		if h := r.host(); s.phase[h] == active {
			rt.push(s, h, uint32(id), now)
		}
	}
}

// flush lets every QUEUING element's partial list go: the scan has
// covered the window.
func (rt *windowState) flush() {
	for {
		ref, ok := rt.queuing.pop()
		if !ok {
			return
		}
		r := &rt.runs[ref.idx]
		if r.gen == ref.gen && r.ep == ref.ep && r.state == Queuing && !r.ready && !r.blocked {
			rt.markReady(ref.idx)
		}
	}
}

// bucketState is host h's element state (FREE if it has none).
func (rt *windowState) bucketState(s *Scheduler, h uint32) BucketState {
	if i := s.runIdx[h]; i != 0 {
		return rt.runs[i-1].state
	}
	return Free
}

// setIP records h's address. A host learns its address while its list
// is out (the node resolves the name to fetch it), so a list out counts
// against the new address from now on; over reports that it is one too
// many there (SetIP).
func (rt *windowState) setIP(s *Scheduler, h uint32, ip netip.Addr) (over bool) {
	ip = ip.Unmap()
	if ip.IsValid() {
		if _, known := rt.ipOf[h]; !known {
			rt.forgetIPs(s)
		}
		rt.ipOf[h] = ip
	} else {
		delete(rt.ipOf, h)
	}
	i := s.runIdx[h]
	if i == 0 {
		return false
	}
	r := &rt.runs[i-1]
	if r.state != Fetching || (r.ipBusy && r.ip == ip) {
		return false
	}
	if r.ipBusy {
		r.ipBusy = false
		rt.ipDone(r.ip)
	}
	if ip.IsValid() {
		r.ip, r.ipBusy = ip, true
		rt.ipBusy[ip]++
		if k := s.cfg.MaxHostsPerIP; k > 0 && int(rt.ipBusy[ip]) > k {
			s.counter.IPBlocked++ // given back: held back like the others
			return true
		}
	}
	return false
}

// ipDone counts a fetch on ip as over and lets one blocked host go.
func (rt *windowState) ipDone(ip netip.Addr) {
	if n := rt.ipBusy[ip] - 1; n > 0 {
		rt.ipBusy[ip] = n
	} else {
		delete(rt.ipBusy, ip)
	}
	w := rt.ipWait[ip]
	for len(w) > 0 {
		ref := w[0]
		w = w[1:]
		r := &rt.runs[ref.idx]
		if r.gen == ref.gen && r.ep == ref.ep && r.state == Queuing && r.blocked {
			r.blocked = false
			rt.markReady(ref.idx)
			break
		}
	}
	if len(w) == 0 {
		delete(rt.ipWait, ip)
	} else {
		rt.ipWait[ip] = w
	}
}

// ipKeep is how many host addresses the scheduler keeps at least before
// it forgets those of hosts with no element (forgetIPs).
const ipKeep = 1 << 16

// forgetIPs drops the addresses of hosts with no element (nothing queued,
// out or waiting) once the map holds ipKeep of them, or twice as many as
// there are elements: kept for good, a crawl over millions of hosts held
// every one's address. Forgetting costs no politeness: the node sets the
// address with every list (SetIP), and a list that went out before it did
// is one too many there and given back (over). The sweep runs when the map
// has at least doubled since the last one, so it costs O(1) per address
// set; the map is made anew, since a Go map never gives back its buckets.
func (rt *windowState) forgetIPs(s *Scheduler) {
	live := len(rt.runs) - len(rt.free)
	if len(rt.ipOf) < max(rt.ipKeep, 2*live) {
		return
	}
	kept := make(map[uint32]netip.Addr, live)
	for h, ip := range rt.ipOf {
		if s.runIdx[h] != 0 {
			kept[h] = ip
		}
	}
	rt.ipOf = kept
}
