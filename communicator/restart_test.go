package communicator

import (
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
