package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// NodeID names a node of the cluster.
type NodeID uint16

// Key is a shared cluster secret with the id datagrams carry.
type Key struct {
	ID     uint8
	Secret []byte
}

// Handler receives one batch from a peer. items and their bytes are valid
// only during the call. n numbers deliveries on this endpoint (1, 2, ...
// across all peers); the batch is acknowledged once the application says
// delivery n is durable (Endpoint.Durable), or on return with
// Config.AckOnReturn.
type Handler func(from NodeID, n uint64, items []Item)

// WireHook sits between the endpoint and the socket, for tests and
// benchmarks: it is given every outgoing datagram and calls send zero or
// more times, now or later, to lose, duplicate or reorder it. b is valid
// only during the call (copy it to send it later).
type WireHook func(b []byte, to netip.AddrPort, send func([]byte))

// Config configures an Endpoint. Self, Peers, Keys and Handler are
// required; every other field has a default.
type Config struct {
	Self NodeID
	// Peers maps every node id of the cluster to its UDP address,
	// Self included (the endpoint binds Self's address unless Conn is
	// given). Datagrams are accepted only from these addresses.
	Peers map[NodeID]netip.AddrPort
	// Conn, if set, is used instead of binding Peers[Self].
	Conn *net.UDPConn
	// Keys: SendKey picks the key datagrams are sealed with; every key
	// listed (at most two, for rotation) is accepted.
	Keys    []Key
	SendKey uint8
	Handler Handler
	// AckOnReturn acknowledges a batch when the handler returns, for
	// handlers whose effect is durable (or need not be) on return.
	AckOnReturn bool
	// ControlTag, if not 0, marks items with a tag at or above it as the
	// application's control messages: PeerStats.ControlItems counts them
	// apart, so that a status can say how many of the rest (URLs) wait,
	// and they are sent ahead of the items queued and spilled before
	// them (in batches of their own), so that a hello announcing a run
	// arrives before the URLs of a long spill file. They wait in memory
	// (up to 64 KiB a peer, then queued as any item): a crash of the
	// sender loses those not yet acknowledged, Sync or not; Close saves
	// them in the spill file.
	ControlTag uint64

	// Payload is the UDP payload size of a datagram (default 1232, at
	// most 1472).
	Payload int
	// MaxURL is the longest item accepted (default and ceiling: what fits
	// one datagram).
	MaxURL int
	// FlushInterval: a partial batch leaves after this long (default 50 ms).
	FlushInterval time.Duration
	// SortWindow is how many bytes of queued items are sorted together
	// before front coding (default 16 datagrams' worth).
	SortWindow int
	// Window is the number of unacknowledged batches per peer (default
	// 512, at most MaxWindow).
	Window int
	// RetransmitMin and RetransmitMax bound the back-off (200 ms, 5 s).
	RetransmitMin, RetransmitMax time.Duration
	// DownAfter: a peer with unacknowledged batches that has acknowledged
	// nothing for this long is reported down (default 3 s).
	DownAfter time.Duration
	// QueueBytes bounds each peer's memory queue; beyond it items spill
	// to SpillDir (default 8 MiB, at most MaxQueueBytes).
	QueueBytes int
	// SpillDir holds the per-peer spill files and the endpoint's state
	// file (receive positions, epoch). Empty: no spilling (items beyond
	// QueueBytes are refused with ErrQueueFull) and no state across
	// restarts.
	SpillDir string
	// SentCache is the number of recently sent (peer, tag, URL) entries
	// remembered so a popular link is sent once (default 65536, at most
	// MaxSentCache; -1: off).
	SentCache int
	// SocketBuffer is the socket buffer size asked for (default 4 MiB).
	SocketBuffer int
	// SpillUpkeepEvery spaces the timer's upkeep of a spill file (write
	// buffered records, mark what is acknowledged, fsync) at least this
	// far apart (default 0: every tick). Sync still writes and fsyncs at
	// once; a later mark only widens what a crash may deliver again.
	SpillUpkeepEvery time.Duration
	// Lazy leaves fsyncs to the caller's Sync, for a caller that calls it
	// whenever it needs what it sent durable (a cluster node does, with
	// its URL tree): the timer's spill upkeep writes records (marks of
	// what was acknowledged, items spilled) without fsyncing them, and
	// saves receive positions at most every SpillUpkeepEvery, on a tick
	// that runs anyway (and at Close). Neither keeps the timer ticking.
	// Both only narrow what a crash may deliver again, so a crash between
	// them costs duplicates, which the receiver drops. (The rewrite of a
	// spill file without its acknowledged part, once per 64 MiB of it,
	// fsyncs itself: spillcompact.go.)
	Lazy bool

	Clock Clock
	Hook  WireHook
	// Logf receives warnings (small socket buffers, spill errors).
	Logf func(format string, args ...any)
}

func (c *Config) fill() error {
	if c.Handler == nil {
		return errors.New("communicator: Config.Handler is required")
	}
	if _, ok := c.Peers[c.Self]; !ok && c.Conn == nil {
		return fmt.Errorf("communicator: Peers has no address for Self (%d)", c.Self)
	}
	if len(c.Keys) == 0 || len(c.Keys) > 2 {
		return fmt.Errorf("communicator: %d keys; want one or two", len(c.Keys))
	}
	if err := checkKeys(c.Keys, c.SendKey); err != nil {
		return err
	}
	if c.Payload == 0 {
		c.Payload = DefaultPayload
	}
	if c.Payload < MinPayload || c.Payload > MaxPayload {
		return fmt.Errorf("communicator: Payload %d outside [%d, %d]", c.Payload, MinPayload, MaxPayload)
	}
	room := MaxItemLen(c.Payload)
	if c.MaxURL <= 0 || c.MaxURL > room {
		c.MaxURL = room
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.FlushInterval, 50*time.Millisecond)
	def(&c.RetransmitMin, 200*time.Millisecond)
	def(&c.RetransmitMax, 5*time.Second)
	def(&c.DownAfter, 3*time.Second)
	if c.RetransmitMax < c.RetransmitMin {
		c.RetransmitMax = c.RetransmitMin
	}
	if c.SortWindow <= 0 {
		c.SortWindow = 16 * c.Payload
	}
	if c.Window <= 0 {
		c.Window = 512
	}
	if c.Window > MaxWindow {
		return fmt.Errorf("communicator: Window %d above %d", c.Window, MaxWindow)
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 8 << 20
	}
	if c.QueueBytes > MaxQueueBytes {
		return fmt.Errorf("communicator: QueueBytes %d above %d (the queue's 32-bit offsets)", c.QueueBytes, MaxQueueBytes)
	}
	if c.SentCache == 0 {
		c.SentCache = 1 << 16
	}
	if c.SentCache > MaxSentCache {
		return fmt.Errorf("communicator: SentCache %d above %d", c.SentCache, MaxSentCache)
	}
	if c.SocketBuffer <= 0 {
		c.SocketBuffer = 4 << 20
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

// MaxWindow and MaxSentCache bound Config.Window and SentCache: each
// peer holds a slot per window batch, the cache a word per entry, and
// sizes beyond these only exhaust memory (a typo's 1e12 panicked New).
const (
	MaxWindow    = 1 << 16
	MaxSentCache = 1 << 24
)

// MaxQueueBytes is the largest Config.QueueBytes: a queue addresses its
// bytes with 32-bit offsets, and holds at most twice its bytes and 1 MiB.
const MaxQueueBytes = 512 << 20

// MaxItemLen is the longest item a datagram of payload bytes carries
// (1126 bytes at the default payload): Send refuses longer ones.
func MaxItemLen(payload int) int {
	return payload - headerSize - macSize - rangeReserve - 3*binary.MaxVarintLen64
}

func checkKeys(keys []Key, send uint8) error {
	found := false
	for i, k := range keys {
		if len(k.Secret) < 16 {
			return fmt.Errorf("communicator: key %d: secret of %d bytes; want at least 16", k.ID, len(k.Secret))
		}
		if i == 1 && keys[0].ID == k.ID {
			return fmt.Errorf("communicator: two keys with id %d", k.ID)
		}
		found = found || k.ID == send
	}
	if !found {
		return fmt.Errorf("communicator: SendKey %d is not among the keys", send)
	}
	return nil
}
