package communicator

// spillMem is the write-through copy of a spill file's newest items: every
// item record at or after from is also here, in file order, with the
// offset just past its record. While the reader is at or past from it
// takes items from here, so items spilled and sent in one run are written
// to the file but never read back (a cluster node spills every item it
// sends, QueueBytes 1, so that a crash loses none: it read each back with
// a pread before). Items of an earlier run, or beyond memCap, come from
// the file. The file stays the truth for marks and after a restart; the
// order and offsets are the file's, so marks mean the same either way.
type spillMem struct {
	limit int // URL bytes kept at most (memCap; tests lower it)
	on    bool
	from  int64 // when on: every item record at or after from is held
	items []memItem
	head  int
	slab  []byte
	// control counts the control items among items[head:] (a tag at or
	// above controlTag, Config.ControlTag; 0: none are).
	controlTag uint64
	control    int
}

type memItem struct {
	tag    uint64
	off    int32 // in slab
	n      int32
	recEnd int64 // file offset just past the item's record
}

// memCap bounds the URL bytes kept per spill file: a peer down for long
// has its items read back from the file, as before write-through.
const memCap = 512 << 10

// start keeps every item appended from off on (the current end).
func (m *spillMem) start(off int64) {
	if m.limit == 0 {
		m.limit = memCap
	}
	m.on, m.from = true, off
	m.reset()
}

func (m *spillMem) reset() {
	m.items, m.slab, m.head, m.control = m.items[:0], m.slab[:0], 0, 0
}

// keep holds an item just appended, whose record ends at recEnd; past
// memCap it stops keeping until the reader catches up with the file.
func (m *spillMem) keep(tag uint64, url []byte, recEnd int64) {
	if !m.on {
		return
	}
	if len(m.slab)+len(url) > m.limit {
		m.on = false
		m.reset()
		return
	}
	m.items = append(m.items, memItem{tag, int32(len(m.slab)), int32(len(url)), recEnd})
	m.slab = append(m.slab, url...)
	if isControl(m.controlTag, tag) {
		m.control++
	}
}

// covers reports whether the reader at off takes its items from memory.
func (m *spillMem) covers(off int64) bool { return m.on && off >= m.from }

// readMem moves items from memory to q until q holds limit bytes; once
// memory is empty the reader is at the file's end (only marks can follow
// the last item).
func (s *spill) readMem(q *queue, limit int) {
	m := &s.mem
	for q.bytes < limit && m.head < len(m.items) {
		it := m.items[m.head]
		q.push(it.tag, m.slab[it.off:it.off+it.n])
		s.readOff = it.recEnd
		s.unreadItems--
		if isControl(m.controlTag, it.tag) {
			s.unreadControl--
			m.control--
		}
		m.head++
	}
	if m.head == len(m.items) {
		m.reset()
		s.readOff = s.end
	}
}

// skipTo gives up on the file's records from readOff to off (damage found
// while reading): the reader goes on at off, which is where memory takes
// over, or the end.
func (s *spill) skipTo(off int64) {
	s.readOff = off
	if s.mem.covers(off) {
		s.unreadItems = int64(len(s.mem.items) - s.mem.head)
		s.unreadControl = int64(s.mem.control)
	} else {
		s.unreadItems, s.unreadControl = 0, 0
	}
}
