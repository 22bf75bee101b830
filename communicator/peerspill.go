package communicator

import (
	"errors"
	"fmt"
)

// The peer's side of its spill file: upkeep by the timer, and what is
// still owed to the peer when the endpoint closes.

// spillUpkeep writes buffered spill records, records how far the file is
// acknowledged, and fsyncs.
func (p *peer) spillUpkeep() {
	s := p.spill
	off := s.readOff
	if p.sq.len() > 0 {
		off = p.sqOff
	}
	for i := range p.win {
		if b := &p.win[i]; b.used && b.fromSpill && b.spillOff < off {
			off = b.spillOff
		}
	}
	idle := p.sq.len() == 0 && !s.unread()
	if !p.closed {
		// Not at Close: the next start rewrites the file if need be.
		c, err := s.compactBegin(off)
		if err != nil && s.news(err) {
			// Not fatal: the file stays as it is, marks go on.
			p.e.cfg.Logf("communicator: %v", err)
		}
		if c != nil {
			p.e.wg.Add(1) // the timer loop's count holds: Close waits for it
			go p.compactSpill(c, s.flushed)
		}
	}
	err := s.mark(off, idle)
	if err == nil && p.e.cfg.Lazy {
		err = s.flush() // fsynced by the caller's next Sync
	} else if err == nil {
		err = s.sync()
	}
	if err != nil && s.news(err) {
		p.e.cfg.Logf("communicator: %v", err)
	}
}

// compactSpill makes the rewrite c of the spill file (spillcompact.go):
// the copy up to to and its fsync without the peer's lock, then rounds of
// what was appended meanwhile, the last of them, the rename and the move
// of the peer's offsets with it.
func (p *peer) compactSpill(c *spillCompaction, to int64) {
	defer p.e.wg.Done()
	c.copyTo(to)
	if c.err == nil {
		if err := c.tmp.Sync(); err != nil {
			c.err = fmt.Errorf("fsync of %s.tmp: %w", c.path, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.spill
	for range spillCompactRounds {
		if c.err != nil {
			break
		}
		if err := s.flush(); err != nil {
			c.err = err
			break
		}
		if s.flushed-c.copied <= spillCompactStep {
			break
		}
		to := s.flushed
		p.mu.Unlock()
		c.copyTo(to)
		p.mu.Lock()
	}
	gone, err := s.compactFinish(c)
	if err != nil && s.news(err) {
		p.e.cfg.Logf("communicator: %v", err)
	}
	if gone > 0 {
		// Every offset of the file moved down: ours too.
		p.sqOff -= gone
		for i := range p.win {
			if b := &p.win[i]; b.used && b.fromSpill {
				b.spillOff -= gone
			}
		}
	}
}

func (p *peer) closeSpill() {
	if p.spill != nil {
		p.spill.close()
	}
}

// shutdown saves what is still owed to the peer: in-flight batches from
// memory, the control queue and the memory queue go to the spill file (spilled items are
// there already) and leave the counts of the window and the queue. Without a spill file it returns how many items are lost.
// A spill write that fails (a full disk) does not stop it: every item is
// still given to the file's buffer and the file closed, and the error says
// how many items may not have reached the file.
func (p *peer) shutdown() (lost int, err error) {
	p.closed = true
	var items []Item
	var buf []byte
	var errs []error
	save := func(tag uint64, url []byte) {
		if p.spill == nil {
			lost++
		} else if err := p.spill.append(tag, url); err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	}
	for i := range p.win {
		b := &p.win[i]
		if !b.used || b.fromSpill {
			continue
		}
		// The batch leaves the window: its items are in the spill file
		// now, or lost; stats read after Close counted them twice.
		p.inflight--
		p.inItems -= b.items
		p.inControl -= b.control
		b.used = false
		if p.spill == nil {
			lost += b.items
			continue
		}
		var derr error
		if items, buf, derr = decodeItems(b.body, b.raw, p.e.cfg.MaxURL, items, buf); derr != nil {
			// Our own encoding: cannot fail but by a bug, which must
			// not pass unsaid.
			lost += b.items
			errs = append(errs, fmt.Errorf("communicator: node %d: batch %d in flight does not decode: %w", p.id, b.seq, derr))
			continue
		}
		for _, it := range items {
			save(it.Tag, it.URL)
		}
	}
	for _, q := range []*queue{&p.cq, &p.q} {
		for _, it := range q.items[q.head:] {
			save(it.tag, q.bytesOf(it))
		}
		q.reset()
	}
	if p.spill != nil {
		p.spillUpkeep()
		if cerr := p.spill.close(); cerr != nil {
			errs = append(errs, cerr)
		}
		if n := p.spill.unwritten; n > 0 && len(errs) > 0 {
			errs = append(errs, fmt.Errorf("communicator: node %d: up to %d items for it did not reach spill file %s and are lost: the next start cannot send them", p.id, n, p.spill.path))
		}
	}
	return lost, errors.Join(errs...)
}
