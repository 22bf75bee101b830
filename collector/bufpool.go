package collector

import (
	"io"
	"sync"
)

// bufPool recycles the buffers results hold, in power-of-two size classes
// from 512 bytes (heads) to 1 MiB. Unlike a sync.Pool it is not emptied by every
// garbage collection, which at crawl rates comes every few megabytes; it
// keeps at most max bytes, and larger buffers are left to the collector.
//
// Nor does it keep more than the most its buffers were out at once (lent's
// high-water, lentMax): what is in the pool counts as live heap, which the
// garbage collector's target doubles, and kept up to max the classes'
// high-waters added up to twice what a one-host crawl ever had out (2.1 MB
// of a 6 MB live heap crawling the PostgreSQL docs); a crawl of many hosts
// has more out at once and keeps more.
type bufPool struct {
	mu      sync.Mutex
	classes [poolClasses][]*[]byte
	held    int64
	max     int64
	lent    int64 // bytes of class buffers handed out and not put back
	lentMax int64 // lent's high-water
}

const (
	poolMin     = 512
	poolClasses = 12 // 512 bytes .. 1 MiB

	// bodyHintMax is the most a body buffer starts with, whatever the
	// response announces: the pool's largest class.
	bodyHintMax = poolMin << (poolClasses - 1)
)

// classOf is the smallest class holding n bytes, or -1 past 1 MiB.
func classOf(n int) int {
	for i := range poolClasses {
		if n <= poolMin<<i {
			return i
		}
	}
	return -1
}

// get returns an empty buffer with room for at least n bytes.
func (p *bufPool) get(n int) *[]byte {
	i := classOf(n)
	if i < 0 {
		b := make([]byte, 0, n)
		return &b
	}
	p.mu.Lock()
	p.lent += poolMin << i
	p.lentMax = max(p.lentMax, p.lent)
	if k := len(p.classes[i]); k > 0 {
		b := p.classes[i][k-1]
		p.classes[i] = p.classes[i][:k-1]
		p.held -= int64(cap(*b))
		p.mu.Unlock()
		*b = (*b)[:0]
		return b
	}
	p.mu.Unlock()
	b := make([]byte, 0, poolMin<<i)
	return &b
}

// put keeps b for reuse if it is of a class and the pool has room.
func (p *bufPool) put(b *[]byte) {
	if b == nil {
		return
	}
	c := cap(*b)
	i := classOf(c)
	if i < 0 || poolMin<<i != c {
		return
	}
	p.mu.Lock()
	p.lent -= int64(c)
	if p.held+int64(c) <= min(p.max, p.lentMax) {
		p.classes[i] = append(p.classes[i], b)
		p.held += int64(c)
	}
	p.mu.Unlock()
}

// readCapped appends body to *b until EOF or max+1 bytes, growing *b from
// the pool; complete is false when there was more than max (then *b holds
// exactly max).
func (p *bufPool) readCapped(body interface{ Read([]byte) (int, error) }, b **[]byte, max int64) (complete bool, err error) {
	buf := **b
	for {
		if len(buf) == cap(buf) {
			// Never past max+1: a 10 MiB cap needs no 16 MiB buffer.
			nb := p.get(int(min(2*int64(cap(buf)), max+1)))
			*nb = append(*nb, buf...)
			**b = buf
			p.put(*b)
			*b = nb
			buf = *nb
		}
		room := buf[len(buf):cap(buf)]
		if over := int64(len(buf)) + int64(len(room)) - (max + 1); over > 0 {
			room = room[:int64(len(room))-over]
		}
		n, e := body.Read(room)
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) > max:
			**b = buf[:max]
			return false, nil
		case e == io.EOF:
			**b = buf
			return true, nil
		case e != nil:
			**b = buf
			return false, e
		}
	}
}
