package communicator

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// Drop reasons, counted per datagram (Stats.Drops).
const (
	DropMalformed    = iota // too short, unknown version, bad ranges or items
	DropOversized           // larger than MaxPayload
	DropUnknownKey          // key id not among the keys in force
	DropUnknownNode         // sender id not in Peers (or our own)
	DropWrongAddress        // sender id known, but not from its address
	DropBadMAC              // tag does not match: forged, damaged or wrong secret
	DropMisdirected         // authentic, but addressed to another node
	DropStaleEpoch          // from an older epoch of the sender than one seen
	DropDuplicate           // sequence number already delivered (retransmission or replay)
	DropWindow              // sequence number beyond the receive window
	DropHandshake           // data for our previous epoch; answered with our epoch
	numReasons
)

var dropNames = [numReasons]string{
	"malformed", "oversized", "unknown_key", "unknown_node", "wrong_address",
	"bad_mac", "misdirected", "stale_epoch", "duplicate", "window", "handshake",
}

// DropName is the name of a drop reason, as Stats.Drops keys it.
func DropName(r int) string { return dropNames[r] }

// receiver is the read goroutine's own state: scratch buffers and MACs.
type receiver struct {
	e      *Endpoint
	h      header
	ranges []ackRange
	items  []Item
	buf    []byte
	ring   *keyring
	macs   map[uint8]*macer
}

// A read that fails is tried again after a pause, doubled from
// readPauseMin to readPauseMax while reads keep failing: a persistent
// error retried at once spun a core for as long as it lasted.
const (
	readPauseMin = time.Millisecond
	readPauseMax = 100 * time.Millisecond
)

func (e *Endpoint) readLoop() {
	defer e.wg.Done()
	r := &receiver{e: e}
	b := make([]byte, MaxPayload+1)
	var pause time.Duration // 0: the last read succeeded
	logged := false
	for {
		n, src, err := e.conn.ReadFromUDPAddrPort(b)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-e.done: // Close's read deadline ended the read
				return
			default:
			}
			e.ctr.readErrors.Add(1)
			if !logged {
				logged = true
				e.cfg.Logf("communicator: reading socket %v: %v (tried again after up to %v while it fails; counted as read errors; said once)", e.conn.LocalAddr(), err, readPauseMax)
			}
			pause = min(max(2*pause, readPauseMin), readPauseMax)
			t := time.NewTimer(pause)
			select {
			case <-e.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		pause = 0
		r.receive(b[:n], src)
		e.unpark()
	}
}

func (e *Endpoint) drop(reason int) { e.drops[reason].Add(1) }

// dropFrom counts a drop of a datagram that names peer p as its sender
// (forged, replayed or bad: PeerStats.Drops), and the endpoint's.
func (e *Endpoint) dropFrom(p *peer, reason int) {
	e.drop(reason)
	p.drops[reason].Add(1)
}

// receive handles one datagram from src. Every path that rejects it counts
// one drop reason; none panics on any bytes.
func (r *receiver) receive(b []byte, src netip.AddrPort) {
	e := r.e
	e.ctr.recvDatagrams.Add(1)
	e.ctr.recvBytes.Add(uint64(len(b)))
	if len(b) > MaxPayload {
		e.drop(DropOversized)
		return
	}
	h := &r.h
	if parseHeader(b, h) != nil {
		e.drop(DropMalformed)
		return
	}
	ring := e.keys.Load()
	if ring != r.ring {
		r.ring, r.macs = ring, make(map[uint8]*macer, 2)
		for _, k := range ring.keys {
			r.macs[k.ID] = newMacer(k.Secret)
		}
	}
	m := r.macs[h.keyID]
	if m == nil {
		e.drop(DropUnknownKey)
		return
	}
	p := e.peers[h.from]
	if p == nil {
		e.drop(DropUnknownNode)
		return
	}
	if src.Addr().Unmap() != p.addr.Addr() || src.Port() != p.addr.Port() {
		e.dropFrom(p, DropWrongAddress)
		return
	}
	if !m.verify(b) {
		e.dropFrom(p, DropBadMAC)
		if p.badMACLogged.CompareAndSwap(false, true) {
			// Once per peer: a forger can make many, and the count is in
			// the stats. Most often the node has another secret file.
			e.cfg.Logf("communicator: a datagram from node %d (%v) fails authentication: that node has another secret, or the datagram is forged (counted as bad_mac; said once)", p.id, src)
		}
		return
	}
	if h.to != e.cfg.Self {
		e.dropFrom(p, DropMisdirected)
		return
	}
	body := b[headerSize : len(b)-macSize]
	var err error
	r.ranges, body, err = parseRanges(body, int(h.nranges), h.ack, r.ranges[:0])
	if err != nil || h.flags&^(flagData|flagRaw) != 0 || h.base == 0 || h.base > maxSeq+1 || h.seq > maxSeq || (h.flags&flagData == 0) != (len(body) == 0) || (h.flags&flagData != 0) != (h.seq != 0) {
		e.dropFrom(p, DropMalformed)
		return
	}
	if h.flags&flagData != 0 {
		if r.items, r.buf, err = decodeItems(body, h.flags&flagRaw != 0, e.cfg.MaxURL, r.items, r.buf); err != nil {
			e.dropFrom(p, DropMalformed)
			return
		}
	}
	now := e.cfg.Clock.Now()

	p.mu.Lock()
	ok, newer := p.theirEpoch(h.epoch)
	if !ok {
		seen := p.theirs
		p.mu.Unlock()
		e.dropFrom(p, DropStaleEpoch)
		if p.staleLogged.CompareAndSwap(false, true) {
			// Once per peer, as for bad tags. A replay is harmless, but
			// a node restarted without its state file and with its
			// clock behind the time of an epoch we saw is refused
			// until its clock passes it, shown only as down.
			e.cfg.Logf("communicator: datagrams from node %d (%v) carry its epoch %d, older than %d seen before: replayed, or node %d restarted without its state file (SpillDir/state) and with its clock behind the time it ran at before; its datagrams are refused until it restarts with its clock past %v (counted as stale_epoch; said once)",
				p.id, src, h.epoch, seen, p.id, time.UnixMilli(int64(seen>>16)).UTC().Format(time.RFC3339))
		}
		return
	}
	if !p.rx.known || p.rx.epoch != h.epoch {
		// First datagram of this sender epoch: its base says where its
		// numbers stand (a saved position of the same epoch may be ahead).
		p.rx.reset(h.epoch, h.base-1)
		if ent, ok := e.state.entry(p.id); ok && ent.epoch == h.epoch && ent.cum > h.base-1 {
			p.rx.advanceTo(ent.cum)
		}
	}
	p.rx.advanceTo(h.base - 1)
	// Batches sent from here on name the peer's new epoch: resendAll
	// leaves them out.
	sends := p.sends
	if newer {
		// Only now that rx is this epoch's: a datagram packed before
		// would name the new epoch but carry the acknowledgements of
		// the old one, and the peer's restarted run would take batches
		// it numbered anew for acknowledged, though never delivered.
		p.pack(false)
	}
	if h.peerEpoch == e.epoch {
		p.onAck(h.ack, r.ranges, now)
	}
	if newer {
		// After the acknowledgement, which may cover some of them.
		p.resendAll(now, sends)
	}
	if h.flags&flagData == 0 {
		p.mu.Unlock()
		return
	}
	if h.peerEpoch != e.epoch {
		// Meant for an earlier start of ours (or sent before the peer
		// heard from us): drop it, and tell the peer our epoch so it
		// sends again. This is what stops replays across our restarts.
		// The answer leaves at the next tick, as for a duplicate: sent
		// at once, each replayed datagram made one, as fast as a forger
		// replays them.
		p.answer()
		p.mu.Unlock()
		e.dropFrom(p, DropHandshake)
		return
	}
	switch p.rx.check(h.seq) {
	case seqDuplicate:
		// Our ack may have been lost: acknowledge again.
		p.answer()
		p.mu.Unlock()
		e.dropFrom(p, DropDuplicate)
		return
	case seqOutOfWindow:
		p.mu.Unlock()
		e.dropFrom(p, DropWindow)
		return
	}
	n := e.deliveries.Add(1)
	p.rx.markSeen(h.seq, n)
	p.mu.Unlock()

	e.ctr.recvItems.Add(uint64(len(r.items)))
	e.cfg.Handler(h.from, n, r.items)
	e.ctr.delivered.Add(1)

	if e.cfg.AckOnReturn {
		p.mu.Lock()
		p.rx.durable(n)
		if p.rx.fresh >= 8 {
			p.transmit(nil, now, false)
		}
		p.mu.Unlock()
	}
}
