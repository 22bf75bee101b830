package collector

import "testing"

// TestBufPoolKeepsNoMoreThanLent: the pool keeps at most what was out at
// once, however the buffers come back, and never more than its max; a
// buffer taken again comes from the pool.
func TestBufPoolKeepsNoMoreThanLent(t *testing.T) {
	p := &bufPool{max: 1 << 20}
	// Out at once: 4 KiB + 8 KiB + 16 KiB = 28 KiB.
	a, b, c := p.get(4<<10), p.get(8<<10), p.get(16<<10)
	p.put(a)
	p.put(b)
	p.put(c)
	if p.held != 28<<10 || p.lent != 0 || p.lentMax != 28<<10 {
		t.Fatalf("held %d, lent %d, lentMax %d; want 28 KiB, 0, 28 KiB", p.held, p.lent, p.lentMax)
	}
	// One at a time, 64 KiB buffers: the first is 64 KiB out at once, the
	// most so far; the pool has room for none of them beyond its 28 KiB.
	for range 4 {
		p.put(p.get(64 << 10))
	}
	if p.held > p.lentMax || p.lentMax != 64<<10 {
		t.Errorf("held %d, lentMax %d: held above the most out at once", p.held, p.lentMax)
	}
	// A class in the pool is served from it.
	if got := p.get(16 << 10); got != c {
		t.Error("a 16 KiB buffer was made although the pool held one")
	}
	// The max bounds the pool whatever was lent.
	q := &bufPool{max: 8 << 10}
	bufs := []*[]byte{q.get(4 << 10), q.get(4 << 10), q.get(4 << 10)}
	for _, x := range bufs {
		q.put(x)
	}
	if q.held != 8<<10 {
		t.Errorf("held %d past a max of 8 KiB", q.held)
	}
}
