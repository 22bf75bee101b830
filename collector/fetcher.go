package collector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// item is one URL of the list being fetched.
type item struct {
	res  *Result
	u    *url.URL
	head bool
	req  int  // index in List.Requests; -1 for robots.txt
	skip bool // AfterRobots skipped it: never sent, ends Skipped
}

// run fetches list l into b.
func (f *fetcher) run(ctx context.Context, l *List, b *Batch) {
	f.ctx, f.each, f.linger, f.stop = ctx, l.Each, l.Linger, l.Stop
	f.after, f.robotsMax = l.AfterRobots, l.RobotsMaxBody
	defer func() {
		f.ctx, f.each, f.linger, f.stop = nil, nil, false, nil
		f.after, f.robots, f.robotsMax, f.skipped = nil, nil, 0, false
	}()
	f.items = f.items[:0]
	f.pending = f.pending[:0]
	var o origin
	have := false
	add := func(r *Result, raw string, head bool, req int) {
		u, err := ParseURL(raw)
		var ro origin
		if err == nil {
			ro, err = originOf(u)
		}
		if err == nil && have && ro.key != o.key {
			err = fmt.Errorf("origin %s is not the list's %s", ro.key, o.key)
		}
		if err != nil {
			r.Kind, r.Err = BadURL, fmt.Errorf("%q: %w", raw, err)
			f.finish(r)
			return
		}
		if !have {
			o, have = ro, true
		}
		f.pending = append(f.pending, len(f.items))
		f.items = append(f.items, item{res: r, u: u, head: head, req: req})
	}
	if b.Robots != nil && len(l.Requests) > 0 {
		// The list's origin comes from its first URL that parses.
		for _, rq := range l.Requests {
			if u, err := ParseURL(rq.URL); err == nil {
				if ro, err := originOf(u); err == nil {
					b.Robots.URL = u.Scheme + "://" + u.Host + "/robots.txt"
					o, have = ro, true
					break
				}
			}
		}
		if have {
			// Item 0 until it is final: the list's requests wait for it.
			add(b.Robots, b.Robots.URL, false, -1)
			f.robots = b.Robots
		}
	}
	for i := range l.Requests {
		add(&b.Results[i], l.Requests[i].URL, l.Requests[i].Head, i)
	}
	if len(f.pending) > 0 {
		f.fetchAll(&o, b)
	}
	f.items = f.items[:0]
}

// fetchAll sends f.pending over one connection at a time until every item
// has its result or the list ends.
func (f *fetcher) fetchAll(o *origin, b *Batch) {
	cfg := &f.col.cfg
	var c *conn
	barren := 0 // connections in a row that answered nothing
	// timedOut: a response of the list timed out, which ends the list. A
	// host that answered each connection's first request at once and
	// stalled the next response held a fetcher for a timeout and a linger
	// per two URLs, its good first responses clearing barren.
	timedOut := false
	// lastKind, lastErr: the list's latest failure, given to the URLs it
	// did not answer when that failure ended it.
	var lastKind Kind
	var lastErr error
	out := f.out[:0]
	if cfg.KeepIdle > 0 {
		f.col.kept.begin(o.host)
	}
	defer func() {
		if c != nil && (len(out) > 0 || len(f.pending) > 0 || !f.park(o, c)) {
			f.close(c, f.linger && f.ctx.Err() == nil)
		}
		if cfg.KeepIdle > 0 {
			f.col.kept.end(o.host) // after park: this list counts there
		}
		for _, x := range out {
			f.pending = append(f.pending, x.idx)
		}
		if f.robots != nil {
			// robots.txt ends first, so that AfterRobots decides before
			// the rest end.
			for k, i := range f.pending {
				if i == 0 {
					copy(f.pending[1:k+1], f.pending[:k])
					f.pending[0] = 0
					break
				}
			}
		}
		for _, i := range f.pending {
			r := f.items[i].res
			if f.items[i].skip {
				r.Kind, r.Err = Skipped, nil
				f.finish(r)
				continue
			}
			if lastErr == nil || f.ctx.Err() != nil {
				r.Kind, r.Err = NotTried, nil
			} else if r.Attempts == 0 || r.Err == nil {
				// Those sent keep requeue's why: lastErr was another
				// URL's failure (a response they were pipelined behind).
				r.Kind, r.Err = lastKind, lastErr
			}
			f.finish(r)
		}
		f.pending = f.pending[:0]
		f.out = out[:0]
		b.Reads, b.Writes = f.reads, f.writes
		f.reads, f.writes = 0, 0
		if f.col.nopipe.has(o.key) {
			b.NoPipeline = true
		}
	}()
	// requeue puts unanswered exchanges back at the front of the queue, in
	// order, unless they were sent MaxAttempts times already. Those put
	// back keep why, for when the list ends before they are sent again.
	requeue := func(xs []exchange, kind Kind, err error) {
		var back []int
		for _, x := range xs {
			r := f.items[x.idx].res
			r.Kind, r.Err = kind, fmt.Errorf("no response after %d attempts: %w", r.Attempts, err)
			if r.Attempts >= cfg.MaxAttempts && f.ctx.Err() == nil {
				f.finish(r)
				continue
			}
			back = append(back, x.idx)
		}
		if len(back) > 0 {
			f.pending = append(back, f.pending...)
		}
	}
	// stale handles a connection kept from an earlier list (idle.go) that
	// failed before its first response: the server closed it while it was
	// idle. Its requests go back, their sends not counted.
	stale := func() bool {
		if !c.reused || c.answered > 0 {
			return false
		}
		for _, x := range out {
			f.items[x.idx].res.Attempts-- // this send does not count
		}
		requeue(out, Reset, errors.New("the kept connection was closed by the server"))
		out = out[:0]
		f.close(c, false)
		c = nil
		return true
	}
	var lastEnd time.Time
	for len(f.pending) > 0 || len(out) > 0 {
		if f.skipped {
			f.dropSkipped()
			continue // the loop's test again: nothing may be left to send
		}
		if f.ctx.Err() != nil || len(out) == 0 && f.stopped() {
			// Cut short, not ended by a failure: a failure the list got
			// over (a connection that died, its requests to be sent
			// again) is not why the rest are unsent.
			lastErr = nil
			return
		}
		if c == nil {
			if barren >= 2 || timedOut {
				return // lastKind/lastErr go to the rest
			}
			if b.Connections > 0 && !f.wait(cfg.ReconnectGap-time.Since(f.lastClose)) {
				return
			}
			var err error
			if b.Connections == 0 && cfg.KeepIdle > 0 {
				// The origin's connection kept from its last list, if
				// any (idle.go); or, when one of its host is being
				// closed, the wait for it.
				kept, closed, ok := f.col.kept.take(f.ctx, o.host, o.key, cfg.Linger)
				if !ok || closed && !f.wait(cfg.ReconnectGap) {
					return
				}
				if kept != nil {
					c = f.reuse(f.ctx, kept)
				}
			}
			if c == nil {
				c, err = f.dial(f.ctx, o)
			}
			if err != nil {
				if f.ctx.Err() == nil {
					var de *dialError
					errors.As(err, &de)
					lastKind, lastErr = de.kind, err
				}
				c = nil
				return
			}
			b.Connections++
			c.seq = b.Connections
		}
		depth := 1
		if c.canPipe && cfg.Pipeline > 1 && !f.col.nopipe.has(o.key) {
			depth = cfg.Pipeline
			if c.br.Size() < cfg.MaxHeader {
				// Pipelined responses come back to back: one read of the
				// big reader takes in several, for one copy each.
				f.growReader(c)
			}
		}
		now := time.Now()
		// Before the requests are written: one longer than the write
		// buffer is flushed while it is written, and under the last
		// round's deadline, past when that round's response took longer
		// than FirstByte, it failed at once.
		c.c.SetWriteDeadline(now.Add(cfg.FirstByte))
		fresh := len(out) // out[fresh:] are the requests this round sends
		for len(out) < depth && len(f.pending) > 0 && !f.stopped() && !f.pastDeadline() {
			i := f.pending[0]
			if f.robots != nil && i != 0 {
				// robots.txt is out and not answered yet: AfterRobots
				// decides what follows it.
				break
			}
			f.pending = f.pending[1:]
			x := exchange{idx: i, req: f.request(c.sent%cfg.Pipeline, &f.items[i]), sent: now, pipelined: len(out) > 0}
			c.sent++
			f.items[i].res.Attempts++
			if f.col.beforeRequest != nil {
				f.col.beforeRequest()
			}
			before := f.cw.n + int64(c.bw.Buffered())
			if err := x.req.Write(c.bw); err != nil {
				// Only a failed flush of a large request gets here; the
				// Flush below fails the same way.
				out = append(out, x)
				break
			}
			x.reqBytes = f.cw.n + int64(c.bw.Buffered()) - before
			if x.pipelined {
				b.Pipelined = true
			}
			out = append(out, x)
		}
		if len(out) == 0 { // stopped between the checks: the loop's test ends it
			continue
		}
		if err := c.bw.Flush(); err != nil {
			if errors.Is(err, errPastCutoff) {
				// The deadline passed since the loop looked: this round's
				// requests were not sent (none whole), and the list ends
				// as a cancelled one does.
				for _, x := range out[fresh:] {
					f.items[x.idx].res.Attempts--
				}
				f.pastDeadline()
				return
			}
			if stale() {
				continue
			}
			if c.answered == 0 {
				barren++
			}
			lastKind, lastErr = f.kindOf(err), err
			if len(out) > 1 {
				f.col.nopipe.add(o.key)
			}
			requeue(out, lastKind, err)
			out = out[:0]
			f.close(c, false)
			c = nil
			continue
		}
		x := out[0]
		turn := x.sent
		if lastEnd.After(turn) {
			turn = lastEnd
		}
		r := f.items[x.idx].res
		r.Timings = Timings{}
		if !c.setupUsed {
			r.Timings = c.setup
			c.setupUsed = true
		}
		info := f.readResponse(c, &x, r, turn)
		lastEnd = time.Now()
		switch info.out {
		case unanswered:
			if stale() {
				continue
			}
			if c.answered == 0 {
				barren++
			}
			lastKind, lastErr = Reset, r.Err
			if len(out) > 1 || c.pipeSeen > 0 {
				f.col.nopipe.add(o.key)
			}
			requeue(out, Reset, r.Err)
			out = out[:0]
			f.close(c, false)
			c = nil
			continue
		case failed:
			if c.answered == 0 {
				// A connection whose first response failed answered
				// nothing, as one that hung up did: a host babbling on
				// every connection otherwise cost each URL its own
				// connection and linger.
				barren++
				lastKind, lastErr = r.Kind, r.Err
			}
			if r.Kind == Timeout {
				timedOut = true
				lastKind, lastErr = r.Kind, r.Err
			}
			if x.pipelined || len(out) > 1 {
				f.col.nopipe.add(o.key)
			}
			// A bad response after a good one may be the tail of the
			// previous response (a Content-Length shorter than its body),
			// not an answer to this request: then it is asked again, alone,
			// on a new connection. Otherwise its result is final.
			kind, why := r.Kind, r.Err
			if r.Kind != BadResponse || !x.pipelined && c.answered == 0 {
				out = out[1:]
				f.done(c, r, x)
				kind, why = Reset, fmt.Errorf("the connection was closed after the response to %s before them (%s)", r.URL, r.Kind)
			}
			requeue(out, kind, why)
			out = out[:0]
			f.close(c, true)
			c = nil
			continue
		}
		out = out[1:]
		c.answered++
		if c.reused && c.answered == 1 {
			setAckTimeout(c.raw, 0) // the connection is alive (reuse)
		}
		if r.Kind == Timeout {
			// A stalled body (a slowloris) ends the list as a silent
			// server does, whichever response of the connection it was.
			timedOut = true
			lastKind, lastErr = r.Kind, r.Err
		} else {
			barren = 0
		}
		f.done(c, r, x)
		// The next response's turn starts once Each is back: the
		// caller's work on this one (a node encodes the page) is not the
		// server's time, nor counted against its timeouts.
		lastEnd = time.Now()
		if c.answered == 1 {
			c.canPipe = info.framed
		}
		if x.pipelined {
			c.pipeSeen++
		}
		switch {
		case !info.keep:
			if len(out) > 0 && (!info.serverClose || !x.pipelined) {
				// A cut body, or a server that closed as soon as it saw
				// requests pipelined behind this one.
				f.col.nopipe.add(o.key)
			}
			why := errors.New("the server closed the connection")
			if r.Kind != Reset && (r.Kind != OK || !info.serverClose) {
				// We close it: the response before them timed out, was
				// too large or framed ambiguously. Said to be the
				// server's close, an operator looked for a server that
				// hung up.
				why = fmt.Errorf("the connection was closed after the response to %s before them (%s)", r.URL, r.Kind)
			}
			requeue(out, Reset, why)
			out = out[:0]
			// With connections kept between lists (idle.go) a server's
			// "Connection: close" often ends a list, and the host's next
			// list dials at once: wait for the server's close first.
			f.close(c, !info.serverClose || r.Kind != OK || cfg.KeepIdle > 0)
			c = nil
		case len(out) == 0 && heldMore(c):
			// Bytes nobody asked for: a second response, or a body longer
			// than announced. Nothing after this point can be trusted.
			if c.pipeSeen > 0 {
				f.col.nopipe.add(o.key)
			}
			f.close(c, true)
			c = nil
		}
	}
}

// stopped reports whether the list's Stop channel is closed.
func (f *fetcher) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// pastDeadline reports whether the list's context has ended or passed its
// deadline. A context.WithDeadline is cancelled by a timer that may run
// late, so a dial or a kept connection's reuse ending at the deadline found
// the context still live and sent a request after it: a cluster node's
// deadline is its slot's closing guard, past which another node may fetch
// from the host. Past the deadline it waits for the cancellation, so that
// the list ends as a cancelled one does.
func (f *fetcher) pastDeadline() bool {
	d, ok := f.ctx.Deadline()
	if !ok || time.Now().Before(d) {
		return f.ctx.Err() != nil
	}
	<-f.ctx.Done()
	return true
}

// done records where the response to x came from; r is final.
func (f *fetcher) done(c *conn, r *Result, x exchange) {
	r.Conn, r.Addr, r.Pipelined = c.seq, c.addr, x.pipelined
	f.finish(r)
}

// finish hands a final result to the list's Each; robots.txt's goes to
// AfterRobots first.
func (f *fetcher) finish(r *Result) {
	if r == f.robots {
		f.robots = nil
		if f.after != nil {
			f.markSkipped(f.after(r))
		}
	}
	if f.each != nil {
		f.each(r)
	}
}

// request builds the request for it in slot, the connection's send count
// modulo Pipeline: at most Pipeline requests are outstanding, so the slot's
// previous request has been answered.
func (f *fetcher) request(slot int, it *item) *http.Request {
	if len(f.reqs) < f.col.cfg.Pipeline {
		f.reqs = make([]http.Request, f.col.cfg.Pipeline)
	}
	rq := &f.reqs[slot]
	method := http.MethodGet
	if it.head {
		method = http.MethodHead
	}
	*rq = http.Request{Method: method, URL: it.u, Header: f.hdr, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: it.u.Host}
	return rq
}

// wait sleeps d unless the list is cancelled first.
func (f *fetcher) wait(d time.Duration) bool {
	if d <= 0 {
		return f.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-f.ctx.Done():
		return false
	}
}

// markSkipped marks the items AfterRobots skipped; they leave the queue at
// the top of fetchAll's loop (dropSkipped) or in its final sweep.
func (f *fetcher) markSkipped(skip []bool) {
	for k := range f.items {
		it := &f.items[k]
		if it.req >= 0 && it.req < len(skip) && skip[it.req] {
			it.skip = true
			f.skipped = true
		}
	}
}

// dropSkipped finishes the skipped items still queued, Skipped, and takes
// them off the queue. None is out: nothing follows robots.txt before it is
// final.
func (f *fetcher) dropSkipped() {
	f.skipped = false
	keep := f.pending[:0]
	for _, i := range f.pending {
		if f.items[i].skip {
			r := f.items[i].res
			r.Kind, r.Err = Skipped, nil
			f.finish(r)
			continue
		}
		keep = append(keep, i)
	}
	f.pending = keep
}
