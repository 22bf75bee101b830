package communicator

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint sends items to the other nodes of the cluster and hands the
// items they send to its Handler.
type Endpoint struct {
	cfg   Config
	conn  *net.UDPConn
	epoch uint64
	keys  atomic.Pointer[keyring]
	peers map[NodeID]*peer
	order []*peer
	cache *sentCache
	state *stateFile

	deliveries atomic.Uint64
	drops      [numReasons]atomic.Uint64
	ctr        counters

	readBuf, writeBuf int // granted by the kernel
	lastSave          time.Time
	lastSaveErr       string // the last failed save's error, said once

	wake     chan struct{}
	parked   atomic.Bool // the timer loop waits for wake alone: nothing to time
	done     chan struct{}
	wg       sync.WaitGroup
	closeErr error
	closed   sync.Once
}

// keyring is the set of keys in force; replaced whole by SetKeys.
type keyring struct {
	send uint8
	keys []Key
}

func (r *keyring) secret(id uint8) []byte {
	for _, k := range r.keys {
		if k.ID == id {
			return k.Secret
		}
	}
	return nil
}

type counters struct {
	sentDatagrams, sentBytes, sentItems, retransmits atomic.Uint64
	ackOnly                                          atomic.Uint64
	recvDatagrams, recvBytes, recvItems, delivered   atomic.Uint64
	cacheHits, sendErrors, readErrors, refused       atomic.Uint64
}

// ErrQueueFull is returned by Send when a peer's memory queue is full and
// there is no spill directory.
var ErrQueueFull = errors.New("communicator: peer queue full and no spill directory")

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("communicator: endpoint closed")

// ErrTooLong is returned by Send for an item longer than Config.MaxURL.
var ErrTooLong = errors.New("communicator: item longer than MaxURL")

// New starts an endpoint: it binds (or takes) the socket, reads its state
// and spill files, and starts its reader and timer goroutines.
func New(cfg Config) (*Endpoint, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	e := &Endpoint{
		cfg:   cfg,
		peers: make(map[NodeID]*peer),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	e.keys.Store(&keyring{send: cfg.SendKey, keys: slices.Clone(cfg.Keys)})
	if cfg.SentCache > 0 {
		e.cache = newSentCache(cfg.SentCache)
	}
	var err error
	if e.state, err = openState(cfg.SpillDir, cfg.Self); err != nil {
		return nil, err
	}
	for _, w := range e.state.warnings {
		cfg.Logf("communicator: state file %s: %s", e.state.path, w.what)
	}
	e.epoch = e.state.nextEpoch(cfg.Clock.Now())
	// The positions read stay saved with the new epoch: a crash before the
	// next save must not forget them.
	if err := e.state.save(e.epoch, e.state.list()); err != nil {
		e.state.close()
		return nil, err
	}
	for id, addr := range cfg.Peers {
		if id == cfg.Self {
			continue
		}
		p, err := newPeer(e, id, addr.Addr().Unmap(), addr.Port())
		if err != nil {
			e.closePeers()
			return nil, err
		}
		e.peers[id] = p
		e.order = append(e.order, p)
	}
	slices.SortFunc(e.order, func(a, b *peer) int { return int(a.id) - int(b.id) })
	for _, p := range e.order {
		if p.spill == nil {
			continue
		}
		// Damage the open found: items lost or skipped, said where.
		for _, m := range p.spill.errs {
			cfg.Logf("communicator: %s", m)
		}
	}
	if cfg.SpillDir != "" {
		foreign, err := ForeignSpill(cfg.SpillDir, cfg.Self, func(id NodeID) bool { return e.peers[id] != nil })
		if err != nil {
			e.closePeers()
			return nil, err
		}
		for _, f := range foreign {
			cfg.Logf("communicator: spill file %s is not this node's to send (%s): its items are never delivered from here; move it to the data directory of the node that wrote it", f.Path, f.Why(cfg.Self))
		}
	}
	if cfg.Conn != nil {
		e.conn = cfg.Conn
	} else if e.conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Peers[cfg.Self])); err != nil {
		e.closePeers()
		return nil, fmt.Errorf("communicator: %w", err)
	}
	if err := setDontFragment(e.conn); err != nil {
		cfg.Logf("communicator: cannot set don't-fragment: %v", err)
	}
	e.readBuf, e.writeBuf = setBuffers(e.conn, cfg.SocketBuffer)
	if e.readBuf < cfg.SocketBuffer || e.writeBuf < cfg.SocketBuffer {
		cfg.Logf("communicator: socket buffers granted %d (read) / %d (write) bytes of %d asked; raise net.core.rmem_max/wmem_max for bursts", e.readBuf, e.writeBuf, cfg.SocketBuffer)
	}
	e.wg.Add(2)
	go e.readLoop()
	go e.timerLoop()
	return e, nil
}

func (e *Endpoint) closePeers() {
	for _, p := range e.order {
		p.closeSpill()
	}
	e.state.close()
}

// newEpoch is the epoch of a start at now: milliseconds since 1970 in the
// high bits (so a later start has a larger epoch), random low bits.
func newEpoch(now time.Time) uint64 {
	var r [2]byte
	rand.Read(r[:])
	return uint64(now.UnixMilli())<<16 | uint64(binary.BigEndian.Uint16(r[:]))
}

// Epoch is this start's epoch.
func (e *Endpoint) Epoch() uint64 { return e.epoch }

// Addr is the local address of the socket.
func (e *Endpoint) Addr() netip.AddrPort { return e.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// SetKeys replaces the keys in force, for rotation: first add the new key
// everywhere (still sending with the old one), then send with the new one,
// then drop the old one.
func (e *Endpoint) SetKeys(send uint8, keys []Key) error {
	if len(keys) == 0 || len(keys) > 2 {
		return fmt.Errorf("communicator: %d keys; want one or two", len(keys))
	}
	if err := checkKeys(keys, send); err != nil {
		return err
	}
	e.keys.Store(&keyring{send: send, keys: slices.Clone(keys)})
	return nil
}

// Send queues item (tag, url) for peer to. It never blocks on the network:
// the item joins the peer's memory queue, or its spill file once the queue
// is full. A URL sent to the same peer with the same tag recently is
// dropped as already sent (Config.SentCache).
func (e *Endpoint) Send(to NodeID, tag uint64, url []byte) error {
	p := e.peers[to]
	if p == nil {
		return fmt.Errorf("communicator: unknown peer %d", to)
	}
	select {
	case <-e.done:
		return ErrClosed
	default:
	}
	if len(url) == 0 || len(url) > e.cfg.MaxURL {
		e.ctr.refused.Add(1)
		return fmt.Errorf("%w: %d bytes (max %d)", ErrTooLong, len(url), e.cfg.MaxURL)
	}
	var h uint64
	if e.cache != nil {
		h = e.cache.hash(to, tag, url)
		if e.cache.seen(h) {
			e.ctr.cacheHits.Add(1)
			return nil
		}
	}
	if err := p.enqueue(tag, url); err != nil {
		e.ctr.refused.Add(1)
		return err
	}
	e.unpark()
	if e.cache != nil {
		e.cache.add(h)
	}
	return nil
}

// Flush sends every queued item now instead of at the flush interval.
func (e *Endpoint) Flush() {
	for _, p := range e.order {
		p.mu.Lock()
		p.pack(true)
		p.mu.Unlock()
	}
}

// FlushTo sends the items queued for peer to now instead of at the flush
// interval: for a message that others wait on (a probe, its answer), which
// would otherwise wait up to the interval at each hop.
func (e *Endpoint) FlushTo(to NodeID) {
	if p := e.peers[to]; p != nil {
		p.mu.Lock()
		p.pack(true)
		p.mu.Unlock()
	}
}

// Sync writes every peer's buffered spill records to its file and fsyncs
// it if items were spilled since the last fsync: items spilled before Sync
// survive a crash of this process. Marks of what was acknowledged are
// made durable with them, by the timer (not Lazy) or at Close.
func (e *Endpoint) Sync() error {
	var errs []error
	for _, p := range e.order {
		p.mu.Lock()
		if p.spill != nil {
			errs = append(errs, p.spill.syncItems())
		}
		p.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Durable tells the endpoint that the effect of every delivery numbered n
// or lower is durable: those batches are acknowledged.
func (e *Endpoint) Durable(n uint64) {
	for _, p := range e.order {
		p.mu.Lock()
		p.rx.durable(n)
		p.mu.Unlock()
	}
	e.poke()
}

// DurableFrom is Durable for the batches from peer id alone: an
// application holding back one peer's batches (the spider's, while that
// peer's config differs) acknowledges the other peers' all the same.
func (e *Endpoint) DurableFrom(id NodeID, n uint64) {
	p := e.peers[id]
	if p == nil {
		return
	}
	p.mu.Lock()
	p.rx.durable(n)
	p.mu.Unlock()
	e.poke()
}

func (e *Endpoint) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// unpark wakes the timer loop if it waits without a timer: something may
// now need one (an item queued, a datagram to acknowledge, a position to
// save). Called after the change, so that the loop, which parks before it
// looks for work, either sees the change or is woken.
func (e *Endpoint) unpark() {
	if e.parked.Load() {
		e.poke()
	}
}

// Close stops the endpoint. Items not yet acknowledged are appended to the
// peers' spill files, to be sent after the next start; without a spill
// directory, or with a spill file that cannot be written, they are lost,
// and Close says how many (at most, for a failed write).
func (e *Endpoint) Close() error {
	e.closed.Do(func() {
		close(e.done)
		// Stop the reader (a read deadline in the past ends its read)
		// and the timer, then send the acknowledgements not yet sent,
		// and again those of batches above a peer's cumulative position
		// (their first may have been lost): the state file keeps only
		// that position, so the peer would send such batches to the
		// next start again.
		e.conn.SetReadDeadline(time.Unix(1, 0))
		e.wg.Wait()
		now := e.cfg.Clock.Now()
		for _, p := range e.order {
			p.mu.Lock()
			if p.rx.ackDirty || len(p.rx.advRanges) > 0 {
				p.transmit(nil, now, false)
			}
			p.mu.Unlock()
		}
		e.conn.Close()
		var errs []error
		lost := 0
		for _, p := range e.order {
			p.mu.Lock()
			n, err := p.shutdown()
			p.mu.Unlock()
			lost += n
			if err != nil {
				errs = append(errs, err)
			}
		}
		if err := e.saveState(); err != nil {
			errs = append(errs, err)
		}
		if err := e.state.close(); err != nil {
			errs = append(errs, fmt.Errorf("communicator: %s: %w", e.state.path, err))
		}
		if lost > 0 {
			errs = append(errs, fmt.Errorf("communicator: %d queued or unacknowledged items not delivered (no spill directory)", lost))
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// saveState writes the receive positions of every peer.
func (e *Endpoint) saveState() error {
	if !e.state.enabled() {
		return nil
	}
	ents := make([]stateEntry, 0, len(e.order))
	for _, p := range e.order {
		p.mu.Lock()
		if p.rx.known {
			ents = append(ents, stateEntry{p.id, p.rx.epoch, p.rx.cum})
		}
		p.mu.Unlock()
	}
	return e.state.save(e.epoch, ents)
}

// timerLoop flushes partial batches, retransmits, sends pending acks and
// saves state, every tick of the clock while any of that is pending. With
// nothing to time it waits for a wake alone: an idle node of a cluster
// spends minutes waiting for its phase, and a tick costs about as much CPU
// on a busy machine as a page fetched (README "Running a cluster").
func (e *Endpoint) timerLoop() {
	defer e.wg.Done()
	tick := e.tickEvery()
	for {
		// Park first, then look: a change made after the look sees
		// parked and wakes the loop (unpark).
		e.parked.Store(true)
		if e.timed() {
			e.parked.Store(false)
			select {
			case <-e.done:
				return
			case <-e.cfg.Clock.After(tick):
			case <-e.wake:
			}
		} else {
			select {
			case <-e.done:
				return
			case <-e.wake:
			}
			e.parked.Store(false)
		}
		e.onTick()
	}
}

// tickEvery is the timer loop's period while it has work.
func (e *Endpoint) tickEvery() time.Duration { return max(e.cfg.FlushInterval/5, time.Millisecond) }

// timed reports whether some peer has work that a tick does: items queued
// or spilled, batches unacknowledged, an acknowledgement or a receive
// position not yet sent or saved, spill records not yet marked or synced.
func (e *Endpoint) timed() bool {
	for _, p := range e.order {
		p.mu.Lock()
		t := p.timed()
		p.mu.Unlock()
		if t {
			return true
		}
	}
	return false
}

func (e *Endpoint) onTick() {
	now := e.cfg.Clock.Now()
	every := 2 * e.cfg.FlushInterval
	if e.cfg.Lazy {
		every = max(every, e.cfg.SpillUpkeepEvery)
	}
	if e.state.enabled() && now.Sub(e.lastSave) >= every {
		// Receive positions are saved a little after they move: they only
		// narrow what a restart may deliver again (batches whose ack was
		// lost), so they need not hold up the acks themselves.
		unsaved := false
		for _, p := range e.order {
			p.mu.Lock()
			unsaved = unsaved || p.rx.unsaved
			p.rx.unsaved = false
			p.mu.Unlock()
		}
		if unsaved {
			e.lastSave = now
			err := e.saveState()
			if msg := fmt.Sprint(err); err != nil && msg != e.lastSaveErr {
				// Said once while it lasts (a full disk fails every
				// save, ten a second): Close returns it too.
				e.cfg.Logf("communicator: %v", err)
			}
			e.lastSaveErr = ""
			if err != nil {
				e.lastSaveErr = err.Error()
			}
		}
	}
	for _, p := range e.order {
		p.mu.Lock()
		p.tick(now)
		p.mu.Unlock()
	}
}
