package communicator

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// fakePeer is node 2 played by a test on a raw socket.
type fakePeer struct {
	t    *testing.T
	conn *net.UDPConn
	to   net.Addr
}

// data sends a data datagram of sender epoch epoch with one item.
func (f *fakePeer) data(epoch, peerEpoch uint64, seq, base uint32, url string) {
	f.t.Helper()
	h := header{version: wireVersion, keyID: testKey.ID, flags: flagData, from: 2, to: 1, epoch: epoch, peerEpoch: peerEpoch, seq: seq, base: base}
	b := make([]byte, headerSize)
	var enc itemEncoder
	enc.reset()
	enc.add(0, []byte(url), 1000)
	b = enc.appendTo(b)
	putHeader(b, &h)
	if _, err := f.conn.WriteTo(newMacer(testKey.Secret).seal(b), f.to); err != nil {
		f.t.Fatal(err)
	}
}

// TestNoStaleAckAfterPeerRestart: when node 2 restarts (a new epoch), the
// first datagram node 1 sends to the new epoch must not carry its
// acknowledgements of the old one: node 2 numbers its batches from 1
// again and would take the ones the stale ack covers as delivered, though
// they were never received (lost, or not even sent yet), and drop them
// from its window and spill file. Node 2 is played on a raw socket; node 1
// has spilled an item for it that waits to be packed when the new epoch's
// first datagram comes in.
func TestNoStaleAckAfterPeerRestart(t *testing.T) {
	conns, addrs := loopbackConns(t, 3)
	conns[2].Close() // node 3 is down
	clock := NewManualClock(time.Unix(1700000000, 0))
	s := newSink()
	a, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: s.handle, AckOnReturn: true, SpillDir: t.TempDir(), QueueBytes: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := &fakePeer{t: t, conn: conns[1], to: conns[0].LocalAddr()}
	const e1, e2 = 1000 << 16, 2000 << 16
	for seq := uint32(1); seq <= 5; seq++ {
		b.data(e1, a.Epoch(), seq, 1, testURL(2, 1, int(seq)))
	}
	waitUntil(t, 5*time.Second, "epoch e1 delivered", func() bool { return s.count() == 5 })
	// A batch to node 3, never acknowledged, keeps node 1's timer waiting
	// for a tick that the manual clock never gives, once it has looked
	// (the sleep): an item spilled then stays unread until something
	// packs it.
	a.Send(3, 0, []byte("http://three.example/"))
	a.FlushTo(3)
	a.Send(2, 0, []byte("http://one.example/"))
	a.FlushTo(2)
	time.Sleep(20 * time.Millisecond)
	if u := a.Stats().Peers[0].Unacked; u != 1 {
		t.Fatalf("%d batches to node 2 in flight, want 1", u)
	}
	a.Send(2, 0, []byte("http://two.example/"))
	if n := a.Stats().Peers[0].SpillItems; n != 1 {
		t.Fatalf("%d items spilled for node 2 wait to be sent, want 1", n)
	}
	// Node 2 restarts: epoch e2, batch 1.
	b.data(e2, a.Epoch(), 1, 1, "http://run2.example/")
	waitUntil(t, 5*time.Second, "epoch e2 delivered", func() bool { return s.count() == 6 })
	buf := make([]byte, 2000)
	conns[1].SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		n, _, err := conns[1].ReadFrom(buf)
		if err != nil {
			break
		}
		var h header
		parseHeader(buf[:n], &h)
		if h.peerEpoch == e2 && (h.ack > 1 || h.nranges > 0) {
			t.Errorf("node 1 acknowledges batches up to %d (and %d ranges) of node 2's new epoch, which sent only batch 1", h.ack, h.nranges)
		}
	}
}

// TestWindowResentToRestartedPeer: batches in flight when the peer
// restarts went to an epoch that dropped or forgot them. Node 1 sent only
// the oldest of them again (the probe of a stalled peer) until it was
// acknowledged, so a receiver that holds a peer's batches until it has
// seen enough of them (the node holds an unheard peer's URLs up to
// unheardHoldMax batches, while its hello waits behind the full window)
// never got more than the one it held: both waited for good. Node 2 here
// holds everything until it has a window's worth of deliveries.
func TestWindowResentToRestartedPeer(t *testing.T) {
	const window = 8
	cl := newCluster(t, 2, func(i int, c *Config) {
		c.Window = window
		c.QueueBytes = 1 << 20
	})
	a := cl.eps[0]
	a.Send(2, 0, []byte(testURL(1, 2, 0)))
	a.Flush()
	waitUntil(t, 5*time.Second, "first item delivered", func() bool { return cl.sinks[1].count() == 1 && a.Backlog(2) == 0 })
	addr := cl.eps[1].Addr()
	if err := cl.eps[1].Close(); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for k := 1; k <= n; k++ {
		if err := a.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
			t.Fatal(err)
		}
	}
	a.Flush()
	waitUntil(t, 5*time.Second, "a full window in flight to the stopped node 2", func() bool { return a.Stats().Peers[0].Unacked == window })
	if a.Backlog(2) < n/2 {
		t.Fatalf("backlog %d: too few items wait behind the window for the test", a.Backlog(2))
	}

	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	b, err := New(Config{Self: 2, Peers: cl.addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID, Handler: s.handle,
		Window: window, FlushInterval: 5 * time.Millisecond, RetransmitMin: 20 * time.Millisecond, RetransmitMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	deliveries := func() uint64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lastN
	}
	waitUntil(t, 5*time.Second, "the window's batches delivered to the restarted node 2 while it holds them", func() bool { return deliveries() >= window })
	waitUntil(t, 20*time.Second, "every item delivered once released", func() bool {
		b.Durable(deliveries())
		return s.count() >= n && a.Backlog(2) == 0
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := 1; k <= n; k++ {
		if got := s.got[fmt.Sprintf("1 0 %s", testURL(1, 2, k))]; got != 1 {
			t.Fatalf("item %d delivered %d times to the restarted node 2", k, got)
		}
	}
}
