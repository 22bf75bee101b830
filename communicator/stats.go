package communicator

import (
	"net/netip"
	"time"
)

// Stats is a snapshot of an endpoint's counters, for the status page.
type Stats struct {
	Self  NodeID
	Epoch uint64
	// ReadBuffer and WriteBuffer are the socket buffer sizes the kernel
	// granted.
	ReadBuffer, WriteBuffer int

	SentDatagrams, SentBytes, SentItems uint64 // UDP payloads, data items
	Retransmits, AckOnly                uint64
	RecvDatagrams, RecvBytes, RecvItems uint64
	Delivered                           uint64 // batches handed to the handler
	CacheHits                           uint64 // items not sent: sent recently
	SendErrors                          uint64 // socket write errors
	ReadErrors                          uint64 // socket read errors (each retried after a pause)
	Refused                             uint64 // Send errors: too long, queue full
	// Drops counts rejected datagrams by reason (DropName).
	Drops map[string]uint64
	Peers []PeerStats
}

// PeerStats is one peer's send and receive state.
type PeerStats struct {
	ID   NodeID
	Addr netip.AddrPort
	// Down: batches have waited unacknowledged longer than DownAfter.
	Down         bool
	LastAck      time.Time
	Epoch        uint64 // the peer's epoch as last seen (0: never heard)
	Queued       int    // items in the memory queue
	QueuedBytes  int
	Unacked      int // batches in flight
	UnackedItems int
	// ControlItems is how many of the items queued, in flight and unread
	// in the spill file are control items (Config.ControlTag): the rest
	// are the application's data (a node's URLs). SpillControlItems is
	// how many of SpillItems are.
	ControlItems      int
	SpillControlItems int64
	Retransmits       uint64
	// AcksMerged counts the datagrams that wanted an answer (already
	// delivered, or for an earlier start of this node: counted in Drops
	// as duplicate, handshake) when one was due already: at most one
	// acknowledgement on its own leaves per peer per tick, however many
	// ask (replays flooded by a forger, say), and these are the ones that
	// did not get their own.
	AcksMerged uint64
	// Exhausted: this start has given out every sequence number it may
	// use towards the peer (about 4.3 billion batches); nothing more is
	// sent to it until this node restarts.
	Exhausted bool
	// SpillBytes is the size of the spill file, SpillItems the items in
	// it not yet sent, SpilledItems all items ever spilled.
	SpillBytes   int64
	SpillItems   int64
	SpilledItems uint64
	// SpillErrors describe damaged spill records (file and offset), at
	// most 32 of them (spillErrsMax): the first 31, then the latest,
	// which says how many more there were; SpillSkipped is the damaged
	// bytes the reader skipped, in SpillDamaged stretches, all counted
	// whether listed in SpillErrors or not.
	SpillErrors  []string
	SpillSkipped int64
	SpillDamaged int
	// RecvAcked is the peer's highest sequence number acknowledged with
	// all before it; RecvPending batches wait for Durable.
	RecvAcked   uint32
	RecvPending int
	// Drops counts the datagrams dropped that named this peer as their
	// sender, by reason (DropName; only reasons with a count): with a
	// wrong address or MAC (forged), of an old epoch or already delivered
	// (replayed, or retransmitted), misdirected, malformed or beyond the
	// window. Datagrams that name no known peer count in Stats.Drops only.
	Drops map[string]uint64
}

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	s := Stats{
		Self: e.cfg.Self, Epoch: e.epoch, ReadBuffer: e.readBuf, WriteBuffer: e.writeBuf,
		SentDatagrams: e.ctr.sentDatagrams.Load(), SentBytes: e.ctr.sentBytes.Load(),
		SentItems: e.ctr.sentItems.Load(), Retransmits: e.ctr.retransmits.Load(), AckOnly: e.ctr.ackOnly.Load(),
		RecvDatagrams: e.ctr.recvDatagrams.Load(), RecvBytes: e.ctr.recvBytes.Load(),
		RecvItems: e.ctr.recvItems.Load(), Delivered: e.ctr.delivered.Load(),
		CacheHits: e.ctr.cacheHits.Load(), SendErrors: e.ctr.sendErrors.Load(), ReadErrors: e.ctr.readErrors.Load(), Refused: e.ctr.refused.Load(),
		Drops: make(map[string]uint64, numReasons),
	}
	for i := range numReasons {
		s.Drops[dropNames[i]] = e.drops[i].Load()
	}
	now := e.cfg.Clock.Now()
	for _, p := range e.order {
		p.mu.Lock()
		ps := PeerStats{
			ID: p.id, Addr: p.addr, Down: p.down(now), LastAck: p.lastAck, Epoch: p.theirs,
			Queued: p.q.len() + p.sq.len() + p.cq.len(), QueuedBytes: p.q.bytes + p.sq.bytes + p.cq.bytes,
			Unacked: p.inflight, UnackedItems: p.inItems, Retransmits: p.retrans, AcksMerged: p.acksMerged, Exhausted: p.exhausted,
			RecvAcked: p.rx.cum, RecvPending: len(p.rx.pending), ControlItems: p.backlogControl(),
		}
		if sp := p.spill; sp != nil {
			ps.SpillBytes = sp.end
			ps.SpillItems, ps.SpillControlItems = sp.unreadItems, sp.unreadControl
			ps.SpilledItems = sp.spilledItems
			ps.SpillErrors = append([]string(nil), sp.errs...)
			ps.SpillSkipped, ps.SpillDamaged = sp.skippedBytes, sp.skippedRegions
		}
		p.mu.Unlock()
		for i := range numReasons {
			if v := p.drops[i].Load(); v > 0 {
				if ps.Drops == nil {
					ps.Drops = map[string]uint64{}
				}
				ps.Drops[dropNames[i]] = v
			}
		}
		s.Peers = append(s.Peers, ps)
	}
	return s
}

// Backlog returns how many items to peer are queued, spilled or in flight.
func (e *Endpoint) Backlog(to NodeID) int {
	p := e.peers[to]
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.backlog()
}

// WaitBacklog blocks until the backlog to peer is at most n items, or
// done is closed (it returns false then); a producer uses it to go no
// faster than the peer acknowledges.
func (e *Endpoint) WaitBacklog(to NodeID, n int, done <-chan struct{}) bool {
	p := e.peers[to]
	if p == nil {
		return true
	}
	for {
		p.mu.Lock()
		b, ch := p.backlog(), p.changed
		p.mu.Unlock()
		if b <= n {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return false
		case <-e.done:
			return false
		}
	}
}
