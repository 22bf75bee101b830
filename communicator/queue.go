package communicator

// queue holds items in arrival order in one byte slab, so queuing a URL
// allocates nothing once the slab has grown.
type queue struct {
	items []qitem
	head  int
	slab  []byte
	bytes int // URL bytes of the queued items
	// control counts the queued items that are control messages (a tag
	// at or above controlTag; controlTag 0: none are).
	controlTag uint64
	control    int
}

// isControl reports whether tag is a control message's under
// Config.ControlTag ctl (0: no tag is).
func isControl(ctl, tag uint64) bool { return ctl != 0 && tag >= ctl }

type qitem struct {
	tag    uint64
	off, n int32
}

func (q *queue) len() int { return len(q.items) - q.head }

func (q *queue) push(tag uint64, url []byte) {
	q.items = append(q.items, qitem{tag, int32(len(q.slab)), int32(len(url))})
	q.slab = append(q.slab, url...)
	q.bytes += len(url)
	if isControl(q.controlTag, tag) {
		q.control++
	}
}

func (q *queue) bytesOf(it qitem) []byte { return q.slab[it.off : it.off+it.n : it.off+it.n] }

// take returns how many items from the head make up at least limit bytes
// (all of them if the queue holds less).
func (q *queue) take(limit int) int {
	n, sum := 0, 0
	for i := q.head; i < len(q.items) && sum < limit; i++ {
		sum += int(q.items[i].n)
		n++
	}
	return n
}

// drop removes n items from the head.
func (q *queue) drop(n int) {
	for _, it := range q.items[q.head : q.head+n] {
		q.bytes -= int(it.n)
		if isControl(q.controlTag, it.tag) {
			q.control--
		}
	}
	q.head += n
	switch {
	case q.head == len(q.items):
		q.items, q.slab, q.head = q.items[:0], q.slab[:0], 0
	case q.head >= 1024 && q.head*2 >= len(q.items), len(q.slab)-q.bytes > max(q.bytes, 1<<20):
		// Compact: copy the live items and their bytes to the front.
		// By bytes too: a few long items gone before many short ones
		// left would otherwise keep the slab growing, without bound
		// but the 32-bit offsets' (a panic past 2 GiB).
		var slab []byte
		if cap(q.slab) >= 2*q.bytes {
			slab = make([]byte, 0, cap(q.slab))
		} else {
			slab = make([]byte, 0, 2*q.bytes)
		}
		k := 0
		for _, it := range q.items[q.head:] {
			off := len(slab)
			slab = append(slab, q.slab[it.off:it.off+it.n]...)
			q.items[k] = qitem{it.tag, int32(off), it.n}
			k++
		}
		q.items, q.slab, q.head = q.items[:k], slab, 0
	}
}

// reset empties the queue.
func (q *queue) reset() {
	q.items, q.slab, q.head, q.bytes, q.control = q.items[:0], q.slab[:0], 0, 0, 0
}
