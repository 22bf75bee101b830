package scheduler

import (
	"context"
	"fmt"
	"time"
)

// List is one host's ids to fetch, in id order, over one connection.
type List struct {
	Host uint32
	Name string // the host name
	IDs  []uint32
	Slot int64 // the slot it was handed out in
	// Until is when the slot's guard interval begins: start no fetch at
	// or after it; report the ids not fetched by then as NotTried.
	Until time.Time
}

// Counters count what the scheduler did since Open.
type Counters struct {
	Added     uint64 // ids added
	Lists     uint64 // lists handed out
	Handed    uint64 // ids handed out
	Reported  uint64 // outcomes reported
	Retried   uint64 // temporary failures sent back to in-list (stalled)
	GaveUp    uint64 // URLs failed after MaxRetries temporary failures
	NotTried  uint64 // ids returned untried (cut short at a slot's end)
	Switches  uint64 // phase changes seen
	IPBlocked uint64 // lists held back by MaxHostsPerIP
}

// Counters returns the counters.
func (s *Scheduler) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counter
}

func (s *Scheduler) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// scanChunk bounds the ids one take scans while holding the lock.
const scanChunk = 1 << 16

// TryNext returns the next ready list, if any. When there is none, wake
// is when the next timer runs (zero: none pending); an Add or a Report may
// make a list ready sooner.
func (s *Scheduler) TryNext() (l List, ok bool, wake time.Time, err error) {
	l, ok, wake, _, err = s.tryNext()
	return l, ok, wake, err
}

// tryNext is TryNext, also returning the phase clock's time it looked at.
func (s *Scheduler) tryNext() (l List, ok bool, wake, now time.Time, err error) {
	p := s.cfg.Clock.Phase()
	now = p.Now
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return List{}, false, time.Time{}, now, err
	}
	l, ok = s.take(p)
	if !ok {
		if e, has := s.rt.events.next(); has {
			wake = time.Unix(0, e.at)
		}
		if !p.MayStart {
			g := p.Start.Add(p.Guard)
			if !p.Now.Before(g) {
				g = p.End.Add(p.Guard)
			}
			if wake.IsZero() || wake.Before(g) {
				wake = g
			}
		} else if g := p.End.Add(p.Guard); !p.End.IsZero() && (wake.IsZero() || g.Before(wake)) {
			// The next slot's phase may have work: look then at the latest.
			wake = g
		}
	}
	return l, ok, wake, now, nil
}

// Next waits for the next ready list or for ctx to end.
func (s *Scheduler) Next(ctx context.Context) (List, error) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		l, ok, wake, now, err := s.tryNext()
		if err != nil || ok {
			return l, err
		}
		// Timers run on the phase clock, which may be ahead of the
		// system clock or behind it (NTP-corrected, SoloClock after a
		// step back): the wait is measured on it, since by the system
		// clock it ended up to MaxWait late, or early again and again.
		// Look again at least every MaxWait for a clock that does not
		// follow the system clock's pace.
		d := s.cfg.MaxWait
		if !wake.IsZero() {
			d = min(d, max(wake.Sub(now), time.Millisecond))
		}
		t.Reset(d)
		select {
		case <-ctx.Done():
			return List{}, ctx.Err()
		case <-s.notify:
		case <-t.C:
		}
	}
}

// take hands out the next ready list at phase p.
func (s *Scheduler) take(p Phase) (List, bool) {
	rt := &s.rt
	now := p.Now.UnixNano()
	rt.observe(s, now)
	if !rt.started || p.Active != rt.active {
		if rt.started {
			s.counter.Switches++
		}
		rt.switchPhase(s, p)
	}
	rt.slot = p.Slot
	rt.fire(s, now)
	if !p.MayStart {
		return List{}, false
	}
	rt.scanSome(s, 4*s.cfg.ListLen, now)
	for budget := scanChunk; ; {
		ref, ok := rt.ready.pop()
		if !ok {
			if budget > 0 && !rt.scanned(s) {
				n := min(budget, 4096)
				rt.scanSome(s, n, now)
				budget -= n
				continue
			}
			if rt.scanned(s) && rt.queuing.len() > 0 {
				rt.flush()
				continue
			}
			return List{}, false
		}
		r := &rt.runs[ref.idx]
		if r.gen != ref.gen || r.ep != ref.ep || r.state != Queuing || !r.ready {
			continue
		}
		r.ready = false
		if k := s.cfg.MaxHostsPerIP; k > 0 {
			if ip, known := rt.ipOf[r.host]; known && int(rt.ipBusy[ip]) >= k {
				r.blocked = true
				rt.ipWait[ip] = append(rt.ipWait[ip], ref)
				s.counter.IPBlocked++
				continue
			}
		}
		if next := s.hostWait(r.host, now); next > now {
			// The clock stepped back since the host's wait ended.
			r.state, r.until = TimeWait, next
			rt.events.add(event{at: r.until, ref: ref, tw: true})
			continue
		}
		if l, ok := s.handOut(ref.idx, p, now); ok {
			return l, true
		}
	}
}

// handOut makes idx's queued ids (up to ListLen) a list.
func (s *Scheduler) handOut(idx int32, p Phase, now int64) (List, bool) {
	rt := &s.rt
	r := &rt.runs[idx]
	n := min(r.queued(), s.cfg.ListLen)
	ids := make([]uint32, 0, n)
	for r.head < len(r.pending) && len(ids) < s.cfg.ListLen {
		id := r.pending[r.head]
		r.head++
		rec := s.recs[id]
		if st := rec.state(); st != InList && st != Stalled {
			continue // finished or taken some other way since it was queued
		}
		s.recs[id] = rec.with(id, InProgress, rec.retries())
		s.states[rec.state()]--
		s.states[InProgress]++
		ids = append(ids, id)
	}
	if r.head == len(r.pending) {
		r.pending, r.head = r.pending[:0], 0
	}
	if len(ids) == 0 {
		r.state = Free
		rt.releaseRow(s, idx, now)
		rt.maybeFree(s, idx)
		return List{}, false
	}
	r.state, r.blocked = Fetching, false
	r.inflight = append(r.inflight[:0], ids...)
	if ip, known := rt.ipOf[r.host]; known {
		r.ip, r.ipBusy = ip, true
		rt.ipBusy[ip]++
	}
	rt.out += len(ids)
	s.counter.Lists++
	s.counter.Handed += uint64(len(ids))
	return List{Host: r.host, Name: s.names[r.host], IDs: ids, Slot: p.Slot, Until: p.End.Add(-p.Guard)}, true
}

// Kind is the outcome of one URL of a list.
type Kind uint8

const (
	Fetched    Kind = iota // fetched; the page (any final status) is done
	Redirect               // fetched; the answer was a redirect
	Denied                 // robots.txt forbids it
	Dropped                // dropped by the node's filters before fetching
	FailedPerm             // failed for good (e.g. a bad URL, 4xx the node treats as final)
	FailedTemp             // failed for now (timeout, connection error, 5xx, 429): retried after back-off
	NotTried               // not fetched: the list was cut short
	numKinds
)

// Outcome is what the node reports for one URL of a list.
type Outcome struct {
	Kind       Kind
	Status     int           // HTTP status, 0 if none
	RetryAfter time.Duration // from a 429 or 503, 0 if none
}

// Report records the outcome of id, which must be in a list handed out.
// When a list's last id is reported, its host enters TIMEWAIT.
func (s *Scheduler) Report(id uint32, o Outcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if o.Kind >= numKinds {
		return fmt.Errorf("scheduler: outcome kind %d for URL %d", o.Kind, id)
	}
	if uint64(id) >= s.count || s.recs[id].state() != InProgress {
		return fmt.Errorf("%w: %d", ErrNotInFlight, id)
	}
	rec := s.recs[id]
	h := rec.host()
	ri := s.runIdx[h]
	if ri == 0 {
		return fmt.Errorf("%w: %d", ErrNotInFlight, id)
	}
	rt := &s.rt
	idx := ri - 1
	r := &rt.runs[idx]
	// The id is in the list out, or in one released before (Release).
	released := false
	if at := indexOf(r.inflight, id); at >= 0 && r.state == Fetching {
		r.inflight[at] = r.inflight[len(r.inflight)-1]
		r.inflight = r.inflight[:len(r.inflight)-1]
	} else if r.released > 0 {
		r.released-- // in progress, of this host, not in the list out
		released = true
	} else {
		return fmt.Errorf("%w: %d", ErrNotInFlight, id)
	}
	rt.out--
	s.counter.Reported++

	hr := &s.hosts[h]
	hostChanged := false
	var st State
	retries := rec.retries()
	switch o.Kind {
	case Fetched:
		st = Completed
	case Redirect:
		st = Redirected
	case Denied:
		st = RobotsDenied
	case Dropped:
		st = Filtered
	case FailedPerm:
		st = Failed
	case FailedTemp:
		st = Stalled
		if int(retries) >= s.cfg.MaxRetries {
			st = Failed
			s.counter.GaveUp++
		} else {
			retries++
			s.counter.Retried++
		}
		if !released {
			r.listErr = true
		}
	case NotTried:
		st = InList
		s.counter.NotTried++
	}
	if o.Kind != FailedTemp && o.Kind != NotTried && !released {
		r.listOK = true
	}
	listOver := !released && len(r.inflight) == 0
	var now int64
	if o.RetryAfter > 0 || listOver {
		now = s.cfg.Clock.Phase().Now.UnixNano()
		rt.observe(s, now)
	}
	if o.RetryAfter > 0 && (o.Status == 429 || o.Status == 503) {
		hr.retryUntil = max(hr.retryUntil, now+int64(min(o.RetryAfter, s.cfg.MaxRetryAfter)))
		hostChanged = true
	}
	s.recs[id] = rec.with(id, st, retries)
	s.states[rec.state()]--
	s.states[st]++
	if st.Unfinished() {
		rt.requeue(s, id, h)
		s.wake()
	} else if uint64(id) == rt.lo {
		rt.advanceLo(s)
	}
	r = &rt.runs[idx]
	switch {
	case listOver:
		s.endList(idx, now)
		hostChanged = true
	case released:
		rt.maybeFree(s, idx)
	}
	if hostChanged {
		s.putHost(h)
	}
	return nil
}

// endList ends idx's list out: the politeness wait starts now, longer if
// it had errors: the streak counts lists that had errors and no success in
// a row; a list with both waits ErrorDelay once. The caller writes the
// host record back.
func (s *Scheduler) endList(idx int32, now int64) {
	rt := &s.rt
	r := &rt.runs[idx]
	hr := &s.hosts[r.host]
	switch {
	case r.listErr && !r.listOK && hr.errStreak < 255:
		hr.errStreak++
	case r.listOK:
		hr.errStreak = 0
	}
	hr.nextStart = s.cfg.delay(hr, now)
	if r.listErr && r.listOK {
		hr.nextStart = max(hr.nextStart, now+int64(s.cfg.ErrorDelay))
	}
	r.listErr, r.listOK = false, false
	if r.ipBusy {
		r.ipBusy = false
		rt.ipDone(r.ip)
	}
	r.state, r.until = TimeWait, hr.nextStart
	if r.until <= now {
		rt.timewaitOver(s, idx, now)
	} else {
		rt.events.add(event{at: r.until, ref: rt.ref(idx), tw: true})
	}
	s.wake()
}

// Release says host h's list out is done with the host: its connection is
// closed and nothing more of it will be fetched. The host's politeness wait
// starts now, as if the list were over, so its next list can go out while
// the node still stores this one's pages; the ids not reported yet stay
// in progress and are reported later, as usual, but their outcomes no
// longer count toward the host's error streak (report failures before
// releasing). A node reports a fetched URL only once its page is durable,
// which can take a sync or two: Release keeps that wait off the host's
// fetching.
func (s *Scheduler) Release(h uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if int(h) >= len(s.runIdx) || s.runIdx[h] == 0 {
		return fmt.Errorf("%w: no list out for host %d", ErrNotInFlight, h)
	}
	idx := s.runIdx[h] - 1
	r := &s.rt.runs[idx]
	if r.state != Fetching {
		return fmt.Errorf("%w: no list out for host %d", ErrNotInFlight, h)
	}
	r.released += len(r.inflight)
	r.inflight = r.inflight[:0]
	now := s.cfg.Clock.Phase().Now.UnixNano()
	s.rt.observe(s, now)
	s.endList(idx, now)
	s.putHost(h)
	return nil
}

func indexOf(ids []uint32, id uint32) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}
