package communicator

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// peer is one other node: the send side (queue, spill, window of
// unacknowledged batches) and the receive side (rx) share its lock.
type peer struct {
	e    *Endpoint
	id   NodeID
	addr netip.AddrPort

	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever the backlog shrinks

	// Send side.
	seq       uint32  // last sequence number given out
	base      uint32  // lowest unacknowledged sequence number
	win       []batch // ring of in-flight batches, indexed seq % len(win)
	inflight  int     // batches in flight
	inItems   int     // items in flight
	inControl int     // of them, control items (Config.ControlTag)
	q         queue   // memory queue, older than anything spilled
	// cq holds control items (Config.ControlTag), sent ahead of q, sq
	// and the spill file (up to controlQueueMax bytes): a node's hello
	// behind a spill file of URLs reached the peer after them, which
	// held them unacknowledged until it heard one, and past its hold
	// took them unchecked.
	cq        queue
	sq        queue     // items read from the spill file, not yet in flight
	sqOff     int64     // spill offset of the chunk sq came from
	qSince    time.Time // when the oldest queued item arrived
	spill     *spill
	lastAck   time.Time
	upkeepAt  time.Time // last spill upkeep by the timer
	firstSent time.Time // oldest unacknowledged send; zero when none
	theirs    uint64    // the peer's epoch as last seen; 0: not yet
	exhausted bool      // every sequence number of this start given out (maxSeq)
	retrans   uint64
	ackAt     time.Time // the last acknowledgement on its own the timer sent
	// answerDue is set when a datagram wants an answer (answer): a
	// duplicate, data for our previous epoch, which anyone can replay
	// at will; rx.ackDirty is set when there is news to tell.
	answerDue bool
	// acksMerged counts the datagrams wanting an answer that found one
	// due already (see answer).
	acksMerged uint64
	srtt       time.Duration // smoothed round-trip time; 0: no sample yet
	rttvar     time.Duration
	// sends numbers transmissions of batches in the order they leave;
	// newestAcked is the number of the latest acknowledged one. (Not a
	// time: goroutines read the clock before they take the lock.)
	sends, newestAcked uint64
	enc                itemEncoder
	out                []byte
	mac                *macer
	macRing            *keyring

	rx rxState
	// closed is set by shutdown: a Send that passed Close's check before
	// it must not queue an item that nothing will send or save.
	closed bool

	// drops counts the datagrams dropped that named this peer as their
	// sender, by reason (it may not have sent them: forged, replayed).
	drops [numReasons]atomic.Uint64
	// badMACLogged is set once the first bad tag in its name is logged.
	badMACLogged atomic.Bool
	// staleLogged is set once the first datagram in its name with an
	// epoch older than seen is logged.
	staleLogged atomic.Bool
	// sendErrLogged is set once the first failed send to it is logged.
	sendErrLogged atomic.Bool
}

// batch is one in-flight datagram's items, kept until acknowledged.
type batch struct {
	seq       uint32
	used      bool
	body      []byte // front-coded items
	items     int
	control   int // of items, control items (Config.ControlTag)
	rto       time.Duration
	sentAt    time.Time // first transmission
	lastSent  uint64    // p.sends at the last transmission
	retried   bool      // retransmitted: no RTT sample (Karn)
	fast      bool      // fast-retransmitted since the last timed send
	due       time.Time
	raw       bool // body suffixes not Huffman-coded
	fromSpill bool
	spillOff  int64 // start of the spill chunk the items came from
}

func newPeer(e *Endpoint, id NodeID, a netip.Addr, port uint16) (*peer, error) {
	p := &peer{
		e:       e,
		id:      id,
		addr:    netip.AddrPortFrom(a, port),
		changed: make(chan struct{}),
		base:    1,
		win:     make([]batch, e.cfg.Window),
		out:     make([]byte, 0, MaxPayload),
		rx:      newRx(e.cfg.Window),
	}
	p.q.controlTag, p.sq.controlTag, p.cq.controlTag = e.cfg.ControlTag, e.cfg.ControlTag, e.cfg.ControlTag
	if ent, ok := e.state.entry(id); ok {
		p.rx.reset(ent.epoch, ent.cum)
		p.rx.unsaved = false
		p.theirs = ent.epoch
	}
	if e.cfg.SpillDir != "" {
		sp, err := openSpill(e.cfg.SpillDir, e.cfg.Self, id, e.cfg.MaxURL, e.cfg.ControlTag)
		if err != nil {
			return nil, err
		}
		p.spill = sp
	}
	return p, nil
}

// controlQueueMax bounds the control items a peer holds apart (cq): past
// it (a peer unreachable for long, sent hellos all the while) they queue
// as any item.
const controlQueueMax = 64 << 10

// enqueue adds one item to the control queue, the memory queue or, once
// that is full or the spill file already holds older items, to the spill
// file.
func (p *peer) enqueue(tag uint64, url []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if isControl(p.cq.controlTag, tag) && p.cq.bytes+len(url) <= controlQueueMax {
		p.cq.push(tag, url)
		p.pack(false)
		return nil
	}
	// Once items are spilled, newer ones follow them into the file until
	// it has been read to its end, so the peer receives them in order.
	if p.spill != nil && (p.spill.unread() || p.sq.len() > 0 || p.q.bytes+len(url) > p.e.cfg.QueueBytes) {
		return p.spill.append(tag, url)
	}
	if p.q.bytes+len(url) > p.e.cfg.QueueBytes {
		return ErrQueueFull
	}
	if p.q.len() == 0 {
		p.qSince = p.e.cfg.Clock.Now()
	}
	p.q.push(tag, url)
	if p.q.bytes >= p.e.cfg.SortWindow {
		p.pack(false)
	}
	return nil
}

// room reports whether the window has a free slot for the next seq.
// Until the peer's epoch is known one batch probes for it: the peer drops
// data that does not name its epoch, and answers with it.
func (p *peer) room() bool {
	if p.seq >= maxSeq {
		if !p.exhausted {
			// Nothing more leaves for the peer until a restart: said, or
			// the items would just wait, the peer neither down nor slow.
			p.exhausted = true
			p.e.cfg.Logf("communicator: node %d: this start has numbered all the %d batches one start may send it; nothing more is sent to it until this node restarts (its queued items are kept, in the spill file if any, and sent after the restart)", p.id, uint32(maxSeq))
		}
		return false // see maxSeq
	}
	if p.theirs == 0 {
		return p.inflight == 0
	}
	return p.seq+1-p.base < uint32(len(p.win))
}

// bodyRoom is how many bytes of items a datagram holds.
func (p *peer) bodyRoom() int {
	return p.e.cfg.Payload - headerSize - macSize - rangeReserve
}

// pack turns queued items into batches and sends them while the window
// has room: control items first, then the memory queue, then items read
// from the spill file. Without flush a trailing partial datagram of the
// memory queue stays queued. Control items and spilled items are always
// packed whole, as they are urgent or late already.
func (p *peer) pack(flush bool) {
	for p.room() {
		switch {
		case p.cq.len() > 0:
			p.packFrom(&p.cq, true, false, 0)
		case p.q.len() > 0:
			if !flush && p.q.bytes < p.e.cfg.SortWindow {
				return
			}
			if !p.packFrom(&p.q, flush, false, 0) {
				return
			}
			if p.q.len() > 0 {
				p.qSince = p.e.cfg.Clock.Now()
			}
		case p.sq.len() > 0:
			p.packFrom(&p.sq, true, true, p.sqOff)
		case p.spill != nil && p.spill.unread():
			p.sqOff = p.spill.readOff
			before := p.backlog()
			if err := p.spill.readChunk(&p.sq, p.e.cfg.SortWindow); err != nil && p.spill.news(err) {
				p.e.cfg.Logf("communicator: %v", err)
			}
			if p.backlog() < before {
				// Damaged records skipped: their items are gone, and
				// no acknowledgement will say so to a waiter.
				p.shrunk()
			}
			if p.sq.len() == 0 {
				return
			}
		default:
			return
		}
	}
}

// packFrom sorts up to a sort window of items from q, front-codes them
// into datagrams and sends each; it reports whether it sent anything.
func (p *peer) packFrom(q *queue, flush, fromSpill bool, spillOff int64) bool {
	n := q.take(p.e.cfg.SortWindow)
	items := q.items[q.head : q.head+n]
	slices.SortFunc(items, func(a, b qitem) int { return bytes.Compare(q.bytesOf(a), q.bytesOf(b)) })
	room := p.bodyRoom()
	sent := false
	i := 0
	for i < n && p.room() {
		b := p.nextBatch()
		p.enc.reset()
		j := i
		for ; j < n; j++ {
			if !p.enc.add(items[j].tag, q.bytesOf(items[j]), room) {
				break
			}
		}
		if j == i {
			// Even alone its code does not fit: send it uncoded.
			b.body, b.raw = rawBody(b.body, items[j].tag, q.bytesOf(items[j])), true
			j++
		} else {
			b.body = p.enc.appendTo(b.body)
		}
		if j == n && !flush && j > i {
			// The last datagram is not full: leave its items queued.
			b.used = false
			p.seq--
			break
		}
		b.items = j - i
		for _, it := range items[i:j] {
			if isControl(q.controlTag, it.tag) {
				b.control++
			}
		}
		b.fromSpill, b.spillOff = fromSpill, spillOff
		p.inflight++
		p.inItems += b.items
		p.inControl += b.control
		p.e.ctr.sentItems.Add(uint64(b.items))
		p.transmit(b, p.e.cfg.Clock.Now(), false)
		sent = true
		i = j
	}
	q.drop(i)
	return sent
}

// nextBatch claims the window slot of the next sequence number.
func (p *peer) nextBatch() *batch {
	p.seq++
	b := &p.win[p.seq%uint32(len(p.win))]
	*b = batch{seq: p.seq, used: true, body: b.body[:0], rto: p.rto()}
	return b
}

// transmit seals and sends batch b (nil: an ack-only datagram).
func (p *peer) transmit(b *batch, now time.Time, retry bool) {
	ring := p.e.keys.Load()
	if p.mac == nil || p.macRing != ring {
		p.mac, p.macRing = newMacer(ring.secret(ring.send)), ring
	}
	h := header{
		version:   wireVersion,
		keyID:     ring.send,
		from:      p.e.cfg.Self,
		to:        p.id,
		epoch:     p.e.epoch,
		peerEpoch: p.theirs,
		base:      p.base,
		ack:       p.rx.advCum,
	}
	if b != nil {
		h.flags, h.seq = flagData, b.seq
		if b.raw {
			h.flags |= flagRaw
		}
	}
	out := p.out[:headerSize]
	room := p.e.cfg.Payload - macSize - headerSize
	if b != nil {
		room -= len(b.body)
	}
	rs := p.rx.advRanges
	for len(rs) > 0 {
		enc := appendRanges(out[headerSize:headerSize], h.ack, rs)
		if len(enc) <= room {
			out = append(out, enc...)
			break
		}
		rs = rs[:len(rs)-1]
	}
	h.nranges = uint8(len(rs))
	putHeader(out, &h)
	if b != nil {
		out = append(out, b.body...)
	}
	out = p.mac.seal(out)
	p.out = out[:0]
	p.rx.ackDirty, p.rx.fresh, p.answerDue = false, 0, false
	if b != nil {
		if p.firstSent.IsZero() {
			p.firstSent = now
		}
		if retry {
			p.retrans++
			p.e.ctr.retransmits.Add(1)
			b.rto = min(b.rto*2, p.e.cfg.RetransmitMax)
			b.retried = true
		} else {
			b.sentAt = now
		}
		p.sends++
		b.lastSent = p.sends
		b.due = now.Add(jitter(b.rto))
	} else {
		p.e.ctr.ackOnly.Add(1)
	}
	p.e.write(out, p)
}

// jitter spreads d by ±25%, which keeps the retransmissions of many
// batches (and of many nodes) apart.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// onAck applies an acknowledgement (cum plus ranges) of our batches.
func (p *peer) onAck(cum uint32, rs []ackRange, now time.Time) {
	if cum > p.seq {
		cum = p.seq // cannot acknowledge what was never sent
	}
	progress := false
	ackOne := func(s uint32) {
		b := &p.win[s%uint32(len(p.win))]
		if b.used && b.seq == s {
			if !b.retried {
				p.rttSample(now.Sub(b.sentAt))
			}
			p.newestAcked = max(p.newestAcked, b.lastSent)
			b.used = false
			p.inflight--
			p.inItems -= b.items
			p.inControl -= b.control
			progress = true
		}
	}
	// Counted loops: a bound near 2^32 must not wrap into an endless one.
	if cum >= p.base {
		for i := range cum - p.base + 1 {
			ackOne(p.base + i)
		}
	}
	for _, r := range rs {
		lo, hi := max(r.lo, p.base), min(r.hi, p.seq)
		if hi < lo || hi-lo >= uint32(len(p.win)) {
			continue
		}
		for i := range hi - lo + 1 {
			ackOne(lo + i)
		}
	}
	for p.base <= p.seq && !p.win[p.base%uint32(len(p.win))].used {
		p.base++
	}
	if p.base > p.seq {
		p.base = p.seq + 1
	}
	// Fast retransmission: a batch that three later batches have
	// overtaken, one of them sent after it, is taken for lost without
	// waiting for its timer. Sending it again makes it the newest, so it
	// goes again only once something sent after that is acknowledged.
	hi := cum
	if len(rs) > 0 {
		hi = max(hi, min(rs[len(rs)-1].hi, p.seq))
	}
	for s := p.base; s <= p.seq && s-p.base < uint32(len(p.win)); s++ {
		b := &p.win[s%uint32(len(p.win))]
		// A batch held back while the peer was stalled (retried) goes
		// as soon as anything sent after it is acknowledged: the probe
		// got through, the peer is back.
		if b.used && b.seq == s && b.lastSent < p.newestAcked && (s+3 <= hi || b.retried) {
			p.transmit(b, now, true)
		}
	}
	if progress {
		p.lastAck = now
		if p.inflight == 0 {
			p.firstSent = time.Time{}
		}
		p.shrunk()
		p.pack(now.Sub(p.qSince) >= p.e.cfg.FlushInterval)
	}
}

// shrunk wakes the WaitBacklog callers: the backlog may have shrunk.
func (p *peer) shrunk() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// rttSample folds one round-trip time into srtt and rttvar (RFC 6298):
// when the receiver is busy or the window deep, the time to an ack grows,
// and a fixed timer would resend batches that are merely queued.
func (p *peer) rttSample(d time.Duration) {
	if p.srtt == 0 {
		p.srtt, p.rttvar = d, d/2
		return
	}
	diff := p.srtt - d
	if diff < 0 {
		diff = -diff
	}
	p.rttvar = (3*p.rttvar + diff) / 4
	p.srtt = (7*p.srtt + d) / 8
}

// rto is the first retransmission timeout of a new batch.
func (p *peer) rto() time.Duration {
	return min(max(p.e.cfg.RetransmitMin, p.srtt+4*p.rttvar), p.e.cfg.RetransmitMax)
}

// theirEpoch records the epoch of an authentic datagram from the peer; ok
// is false for an epoch older than one already seen (a replay), newer is
// true for one later than seen (first contact, a restart): the caller
// starts the receive state of that epoch, then sends again what is in
// flight (resendAll) and packs what waits.
func (p *peer) theirEpoch(epoch uint64) (ok, newer bool) {
	switch {
	case epoch < p.theirs:
		return false, false
	case epoch > p.theirs:
		p.theirs = epoch
		p.rx.ackDirty = true // tell it our epoch
		return true, true
	}
	return true, false
}

// resendAll sends again every batch in flight last sent before send
// number before. At first contact or a restart of the peer, what it has
// not acknowledged went to an epoch that dropped it (the handshake) or
// forgot it, and the peer has just been heard: all of it goes at once,
// not only the oldest batch as to a peer stalled (tick). A receiver may
// hold the batches of a peer until it has seen enough of them (the node
// holds an unheard peer's URLs up to unheardHoldMax batches); sent the
// probe alone, it held it, the rest of the window never came, and the
// window, full, let nothing else through (not a hello either). At most a
// window, once per start of the peer: a replay cannot bring an epoch
// newer than seen.
func (p *peer) resendAll(now time.Time, before uint64) {
	for i := uint32(0); p.base+i <= p.seq && i < uint32(len(p.win)); i++ {
		s := p.base + i
		b := &p.win[s%uint32(len(p.win))]
		if b.used && b.seq == s && b.lastSent <= before {
			b.rto = p.rto()
			p.transmit(b, now, true)
		}
	}
}

// tick does the peer's timed work: flush, retransmit, acks, spill upkeep.
func (p *peer) tick(now time.Time) {
	if p.q.len() > 0 && now.Sub(p.qSince) >= p.e.cfg.FlushInterval {
		p.pack(true)
	} else if p.q.len() == 0 {
		p.pack(true) // spilled items
	} else if p.cq.len() > 0 {
		p.pack(false)
	}
	// Timed retransmission. A due batch that a later-sent batch has
	// overtaken (acknowledged) is taken for lost and sent again. If none
	// has, the peer is slow, stalled or down rather than losing single
	// datagrams: only the oldest batch goes again, as a probe, and the
	// rest wait another back-off instead of piling onto its queue. Once
	// the probe is acknowledged, they count as overtaken and follow.
	for i := uint32(0); p.base+i <= p.seq && i < uint32(len(p.win)); i++ {
		s := p.base + i
		b := &p.win[s%uint32(len(p.win))]
		if !b.used || b.seq != s || now.Before(b.due) {
			continue
		}
		// p.base is the oldest unacknowledged batch: the probe.
		if s == p.base || b.lastSent < p.newestAcked {
			p.transmit(b, now, true)
			continue
		}
		b.rto = min(b.rto*2, p.e.cfg.RetransmitMax)
		b.due = now.Add(jitter(b.rto))
		b.retried = true
	}
	// An answer to datagrams that want one (a duplicate, data for our
	// previous epoch) leaves one tick after the last acknowledgement on
	// its own at the soonest: such a datagram wakes a parked timer loop
	// at once, and replayed by a forger as fast as it can, each would
	// have had its own (timed: answerDue holds). News (batches made
	// durable, our epoch to tell) is not held back by them: it waited
	// for the next tick too, up to FlushInterval/5 after each ack.
	if p.rx.ackDirty || p.answerDue && now.Sub(p.ackAt) >= p.e.tickEvery() {
		p.ackAt = now
		p.transmit(nil, now, false)
	}
	if p.spill != nil && now.Sub(p.upkeepAt) >= p.e.cfg.SpillUpkeepEvery {
		p.upkeepAt = now
		p.spillUpkeep()
	}
}

// answer asks for an acknowledgement to the peer at the next tick, for a
// datagram that wants one (a duplicate, data for our previous epoch). One
// that finds an answer due already is answered by it, and counted: a
// flood of replays, each of which once had an acknowledgement of its own,
// shows there.
func (p *peer) answer() {
	if p.rx.ackDirty || p.answerDue {
		p.acksMerged++
	}
	p.answerDue = true
}

// timed reports whether the peer has work for the timer loop (p.mu held).
func (p *peer) timed() bool {
	lazy := p.e.cfg.Lazy // unsynced records and unsaved positions wait for other work
	if p.q.len() > 0 || p.sq.len() > 0 || p.cq.len() > 0 || p.inflight > 0 || p.rx.ackDirty || p.answerDue || (p.rx.unsaved && !lazy) {
		return true
	}
	s := p.spill
	return s != nil && (s.unread() || len(s.buf) > 0 || (s.dirty && !lazy) || s.consumed < s.end)
}

// down reports whether the peer has left batches unacknowledged for longer
// than DownAfter.
func (p *peer) down(now time.Time) bool {
	if p.firstSent.IsZero() {
		return false
	}
	last := p.lastAck
	if last.Before(p.firstSent) {
		last = p.firstSent
	}
	return now.Sub(last) >= p.e.cfg.DownAfter
}

// backlog is the number of items queued or in flight.
func (p *peer) backlog() int {
	n := p.q.len() + p.sq.len() + p.cq.len() + p.inItems
	if p.spill != nil {
		n += int(p.spill.unreadItems)
	}
	return n
}

// backlogControl is how many of backlog's items are control items
// (Config.ControlTag).
func (p *peer) backlogControl() int {
	n := p.q.control + p.sq.control + p.cq.control + p.inControl
	if p.spill != nil {
		n += int(p.spill.unreadControl)
	}
	return n
}
