package scheduler

import "net/netip"

// BucketState is where a host stands in the buckets.
type BucketState uint8

// A host's element moves FREE → QUEUING (it holds a row of its column and
// collects ids) → FETCHING (its list is out) → TIMEWAIT (the politeness
// delay) → FREE. A FREE host with ids waits for a row of its column.
const (
	Free BucketState = iota
	Queuing
	Fetching
	TimeWait
)

var bucketNames = [...]string{"FREE", "QUEUING", "FETCHING", "TIMEWAIT"}

func (b BucketState) String() string {
	if int(b) < len(bucketNames) {
		return bucketNames[b]
	}
	return "?"
}

// hostRun is the runtime state of a host with work in the window, a list
// out or a politeness wait running; other hosts have none.
type hostRun struct {
	host     uint32
	gen      uint32 // bumped when the element is reused for another host
	ep       uint32 // bumped on every entry into QUEUING
	state    BucketState
	slotted  bool // holds a row of its column
	waiting  bool // in its column's wait list
	ready    bool // in the ready queue
	blocked  bool // waiting for its IP address's fetch count to drop
	ipBusy   bool // counted in ipBusy under ip
	listErr  bool // the list out had a temporary failure
	listOK   bool // the list out had a fetch
	ip       netip.Addr
	col      int32 // the host's column
	waitNext int32 // next in the column's wait list, -1 = none
	pending  []uint32
	head     int
	inflight []uint32 // ids of the list out
	// released counts the ids of released lists (Release) not reported
	// yet: the host's in-progress ids not in inflight. A count, not a
	// list to look reports up in: behind a slow store tens of thousands
	// wait, and the lookups made their reports quadratic.
	released int
	until    int64 // TIMEWAIT end, Unix ns
}

func (r *hostRun) queued() int { return len(r.pending) - r.head }

// runRef names a run in one episode; stale refs are skipped.
type runRef struct {
	idx int32
	gen uint32
	ep  uint32
}

// fifo is a queue of refs.
type fifo struct {
	q    []runRef
	head int
}

func (f *fifo) push(r runRef) { f.q = append(f.q, r) }
func (f *fifo) len() int      { return len(f.q) - f.head }
func (f *fifo) pop() (runRef, bool) {
	if f.head == len(f.q) {
		return runRef{}, false
	}
	r := f.q[f.head]
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	} else if f.head > 1024 && f.head*2 > len(f.q) {
		n := copy(f.q, f.q[f.head:])
		f.q, f.head = f.q[:n], 0
	}
	return r, true
}
func (f *fifo) reset() { f.q, f.head = f.q[:0], 0 }

// event is a timer: a partial list's wait or a TIMEWAIT ends at at.
type event struct {
	at  int64
	ref runRef
	tw  bool // TIMEWAIT end (else partial-list wait)
}

// eventHeap is a min-heap of events by time.
type eventHeap []event

func (h *eventHeap) add(e event) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if q[p].at <= q[i].at {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func (h *eventHeap) next() (event, bool) {
	if len(*h) == 0 {
		return event{}, false
	}
	return (*h)[0], true
}

// drop removes the earliest event.
func (h *eventHeap) drop() {
	q := *h
	n := len(q) - 1
	q[0] = q[n]
	*h = q[:n]
	h.down(0)
}

// heapify restores the heap order after events were removed or added
// out of order.
func (h *eventHeap) heapify() {
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// down moves the event at i down to its place.
func (h *eventHeap) down(i int) {
	q := *h
	n := len(q)
	for {
		l, m := 2*i+1, i
		if l < n && q[l].at < q[m].at {
			m = l
		}
		if r := l + 1; r < n && q[r].at < q[m].at {
			m = r
		}
		if m == i {
			return
		}
		q[m], q[i] = q[i], q[m]
		i = m
	}
}
