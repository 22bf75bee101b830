package communicator

// rxState is the receive side of one peer: which of its sequence numbers
// have been handed to the handler (seen) and which are acknowledged
// (durable), as everything up to cum plus two bitmaps over the window
// above it.
type rxState struct {
	known bool   // epoch and cum are set
	epoch uint64 // the sender's epoch these numbers belong to
	cum   uint32 // every seq <= cum is durable (acknowledged)
	win   uint32 // window size, a multiple of 64
	seen  []uint64
	acked []uint64
	// pending lists handled batches waiting for Durable, in delivery order.
	pending []pend
	// adv is the acknowledgement state datagrams carry.
	advCum    uint32
	advRanges []ackRange
	unsaved   bool // durable changed since the last save
	ackDirty  bool // adv changed (or the peer needs our epoch) since the last datagram to it
	fresh     int  // batches acknowledged since the last datagram to the peer
}

type pend struct {
	n   uint64
	seq uint32
}

func newRx(window int) rxState {
	w := uint32((window + 63) &^ 63)
	return rxState{win: w, seen: make([]uint64, w/64), acked: make([]uint64, w/64)}
}

func bit(m []uint64, seq, w uint32) bool { i := seq % w; return m[i/64]&(1<<(i%64)) != 0 }
func setBit(m []uint64, seq, w uint32)   { i := seq % w; m[i/64] |= 1 << (i % 64) }
func clrBit(m []uint64, seq, w uint32)   { i := seq % w; m[i/64] &^= 1 << (i % 64) }

// reset starts the state of a (new) sender epoch at cum.
func (r *rxState) reset(epoch uint64, cum uint32) {
	r.known, r.epoch, r.cum = true, epoch, cum
	clear(r.seen)
	clear(r.acked)
	r.pending = r.pending[:0]
	r.unsaved = true
	r.publish()
}

// advanceTo moves cum forward to c (the sender's base says all below it
// is acknowledged), forgetting bits it passes.
func (r *rxState) advanceTo(c uint32) {
	if c <= r.cum {
		return
	}
	if c-r.cum >= r.win {
		clear(r.seen)
		clear(r.acked)
	} else {
		for i := uint32(1); i <= c-r.cum; i++ {
			clrBit(r.seen, r.cum+i, r.win)
			clrBit(r.acked, r.cum+i, r.win)
		}
	}
	r.cum = c
	kept := r.pending[:0]
	for _, p := range r.pending {
		if p.seq > c {
			kept = append(kept, p)
		}
	}
	r.pending = kept
	r.unsaved = true
	r.publish()
}

// verdict of a data sequence number.
type verdict int

const (
	seqNew verdict = iota
	seqDuplicate
	seqOutOfWindow
)

func (r *rxState) check(seq uint32) verdict {
	switch {
	case seq <= r.cum || bit(r.seen, seq, r.win):
		return seqDuplicate
	case seq-r.cum > r.win:
		return seqOutOfWindow
	}
	return seqNew
}

func (r *rxState) markSeen(seq uint32, n uint64) {
	setBit(r.seen, seq, r.win)
	r.pending = append(r.pending, pend{n, seq})
}

// durable acknowledges every pending batch delivered as n or earlier.
func (r *rxState) durable(n uint64) {
	i := 0
	for ; i < len(r.pending) && r.pending[i].n <= n; i++ {
		s := r.pending[i].seq
		if s > r.cum {
			setBit(r.acked, s, r.win)
		}
		r.fresh++
	}
	if i == 0 {
		return
	}
	r.pending = r.pending[:copy(r.pending, r.pending[i:])]
	for bit(r.acked, r.cum+1, r.win) {
		r.cum++
		clrBit(r.acked, r.cum, r.win)
		clrBit(r.seen, r.cum, r.win)
	}
	r.unsaved = true
	r.publish()
}

// publish copies the live acknowledgement state into what datagrams carry.
func (r *rxState) publish() {
	r.advCum = r.cum
	r.advRanges = r.advRanges[:0]
	if !r.known {
		return
	}
	for s := r.cum + 1; s-r.cum <= r.win && len(r.advRanges) < maxRanges; s++ {
		if !bit(r.acked, s, r.win) {
			continue
		}
		lo := s
		for s+1-r.cum <= r.win && bit(r.acked, s+1, r.win) {
			s++
		}
		r.advRanges = append(r.advRanges, ackRange{lo, s})
	}
	r.ackDirty = true
}
