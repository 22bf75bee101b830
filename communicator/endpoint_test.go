package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// exchange has every endpoint send per URLs to every other one, waits
// until all are delivered and acknowledged, and checks each arrived
// exactly once.
func exchange(t *testing.T, cl *cluster, per int) {
	t.Helper()
	n := len(cl.eps)
	for i, ep := range cl.eps {
		from := NodeID(i + 1)
		for j := range n {
			to := NodeID(j + 1)
			if to == from {
				continue
			}
			for k := range per {
				if err := ep.Send(to, uint64(k%7), []byte(testURL(from, to, k))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	want := per * (n - 1)
	waitUntil(t, 60*time.Second, "every URL delivered and acknowledged", func() bool {
		for i, s := range cl.sinks {
			if s.count() < want {
				return false
			}
			for j := range n {
				if j != i && cl.eps[i].Backlog(NodeID(j+1)) > 0 {
					return false
				}
			}
		}
		return true
	})
	for i, s := range cl.sinks {
		to := NodeID(i + 1)
		s.mu.Lock()
		if s.total != want || len(s.got) != want {
			t.Errorf("node %d: %d deliveries of %d distinct items; want %d", to, s.total, len(s.got), want)
		}
		for j := range n {
			from := NodeID(j + 1)
			if from == to {
				continue
			}
			for k := range per {
				key := fmt.Sprintf("%d %d %s", from, k%7, testURL(from, to, k))
				if c := s.got[key]; c != 1 {
					t.Fatalf("node %d: %q delivered %d times", to, key, c)
				}
			}
		}
		s.mu.Unlock()
	}
}

func TestExchangeClean(t *testing.T) {
	cl := newCluster(t, 2, nil)
	exchange(t, cl, 5000)
	st := cl.eps[0].Stats()
	for name, c := range st.Drops {
		// A retransmission may cross the acknowledgement on its way.
		if c != 0 && name != "handshake" && name != "duplicate" {
			t.Errorf("clean exchange: %d datagrams dropped as %s", c, name)
		}
	}
	t.Logf("node 1: %d datagrams, %d bytes, %d retransmits, %d ack-only", st.SentDatagrams, st.SentBytes, st.Retransmits, st.AckOnly)
}

// TestExchangeFaults: 10% loss, 10% duplication and 10% reordering on
// every datagram of 2 to 5 endpoints; every URL still arrives exactly once.
func TestExchangeFaults(t *testing.T) {
	for n := 2; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-nodes", n), func(t *testing.T) {
			cl := newCluster(t, n, func(i int, c *Config) {
				c.Hook = Faults(0.10, 0.10, 0.10, uint64(100*n+i))
				c.Window = 64 // a small window makes loss bite harder
			})
			exchange(t, cl, 3000)
			var dup, retr uint64
			for _, ep := range cl.eps {
				st := ep.Stats()
				dup += st.Drops["duplicate"]
				retr += st.Retransmits
			}
			if dup == 0 || retr == 0 {
				t.Errorf("faults not exercised: %d duplicates dropped, %d retransmits", dup, retr)
			}
		})
	}
}

// TestDurableLater: with AckOnReturn off nothing is acknowledged until the
// handler's owner calls Durable, so the sender retransmits, and the
// duplicates are not delivered again.
func TestDurableLater(t *testing.T) {
	clock := NewManualClock(time.Unix(1700000000, 0))
	cl := newCluster(t, 2, func(i int, c *Config) {
		c.AckOnReturn = false
		c.Clock = clock
	})
	for k := range 100 {
		cl.eps[0].Send(2, 0, []byte(testURL(1, 2, k)))
	}
	cl.eps[0].Flush()
	// The first datagrams carry no epoch of node 2 yet: the handshake
	// drops them and the retransmission (at the next tick) delivers.
	waitUntil(t, 10*time.Second, "delivery", func() bool {
		clock.Advance(10 * time.Millisecond)
		return cl.sinks[1].count() == 100
	})
	retr := cl.eps[0].Stats().Retransmits
	for range 50 {
		clock.Advance(100 * time.Millisecond)
	}
	waitUntil(t, 10*time.Second, "retransmissions without Durable", func() bool {
		clock.Advance(100 * time.Millisecond)
		return cl.eps[0].Stats().Retransmits > retr+2 && cl.eps[1].Stats().Drops["duplicate"] > 0
	})
	if b := cl.eps[0].Backlog(2); b != 100 {
		t.Fatalf("backlog %d before Durable; want 100", b)
	}
	cl.sinks[1].mu.Lock()
	n := cl.sinks[1].lastN
	cl.sinks[1].mu.Unlock()
	cl.eps[1].Durable(n)
	waitUntil(t, 10*time.Second, "acknowledgement after Durable", func() bool {
		clock.Advance(10 * time.Millisecond)
		return cl.eps[0].Backlog(2) == 0
	})
	if c := cl.sinks[1].count(); c != 100 {
		t.Fatalf("%d deliveries; want 100", c)
	}
}

// TestCloseWithoutSpill: Close says how many items were not delivered,
// and Send after Close fails.
func TestCloseWithoutSpill(t *testing.T) {
	conns, addrs := loopbackConns(t, 2)
	conns[1].Close() // nobody answers
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, QueueBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for k := range 1000 {
		if err := ep.Send(2, 0, []byte(testURL(1, 2, k))); err != nil {
			if !errors.Is(err, ErrQueueFull) {
				t.Fatal(err)
			}
			break
		}
		sent++
	}
	err = ep.Close()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d queued or unacknowledged items not delivered", sent)) {
		t.Fatalf("Close: %v; want it to count %d undelivered items", err, sent)
	}
	if err := ep.Send(2, 0, []byte("http://x.example/")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

// TestFlushTo: an item queued for a peer leaves at FlushTo, at once, not
// at the flush interval (the clock does not move), and only that peer's.
// Data datagrams are counted, at least one to each: a peer drops
// the first batch of an epoch it has not heard from (the handshake) and
// answers with its own, and node 1 then sends the batch again, at any time
// after FlushTo, as it may send ack-only datagrams.
func TestFlushTo(t *testing.T) {
	clock := NewManualClock(time.Unix(1700000000, 0))
	var mu sync.Mutex
	data := map[netip.AddrPort]int{}
	cl := newCluster(t, 3, func(i int, c *Config) {
		c.Clock = clock
		if i == 0 {
			c.Hook = func(b []byte, to netip.AddrPort, send func([]byte)) {
				if b[2]&flagData != 0 {
					mu.Lock()
					data[to]++
					mu.Unlock()
				}
				send(b)
			}
		}
	})
	sent := func(to NodeID) int {
		mu.Lock()
		defer mu.Unlock()
		return data[cl.addrs[to]]
	}
	cl.eps[0].Send(2, 0, []byte(testURL(1, 2, 0)))
	cl.eps[0].Send(3, 0, []byte(testURL(1, 3, 0)))
	cl.eps[0].FlushTo(2)
	if a, b := sent(2), sent(3); a < 1 || b != 0 {
		t.Fatalf("FlushTo(2) sent %d data datagrams to node 2 and %d to node 3; want 1 (or more) and 0", a, b)
	}
	cl.eps[0].FlushTo(3) // peer 3's item waited: it leaves now
	if b := sent(3); b < 1 {
		t.Fatalf("FlushTo(3) sent %d data datagrams to node 3; want 1 (or more)", b)
	}
	cl.eps[0].FlushTo(9) // no such peer: nothing, no panic
}

// TestSendRacingClose: a Send that passed Close's check before Close ran
// reaches the peer's queue after Close saved it; it must fail with
// ErrClosed, not return nil for an item nothing sends or spills. The
// second part races real Sends with Close: every Send that returned nil
// is in the spill file afterwards.
func TestSendRacingClose(t *testing.T) {
	conns, addrs := loopbackConns(t, 2)
	conns[1].Close() // nobody answers
	dir := t.TempDir()
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, QueueBytes: 1, SpillDir: dir, SentCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	// The interleaving: Send's check passed, then Close, then the queue.
	if err := ep.peers[2].enqueue(0, []byte("http://late.example/")); !errors.Is(err, ErrClosed) {
		t.Fatalf("an item queued after Close: %v; want ErrClosed", err)
	}

	for round := range 5 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		ep, err := New(Config{Self: 1, Peers: addrs, Conn: c, Keys: []Key{testKey}, SendKey: testKey.ID,
			Handler: func(NodeID, uint64, []Item) {}, QueueBytes: 1, SpillDir: dir, SentCache: -1})
		if err != nil {
			t.Fatal(err)
		}
		var accepted atomic.Int64
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 100000 {
					if ep.Send(2, 0, []byte(fmt.Sprintf("http://x.example/%d/%d", g, k))) != nil {
						return
					}
					accepted.Add(1)
				}
			}()
		}
		waitUntil(t, 10*time.Second, "sends under way", func() bool { return accepted.Load() >= 500 })
		ep.Close()
		wg.Wait()
		s, err := openSpill(dir, 1, 2, MaxItemLen(DefaultPayload), 0)
		if err != nil {
			t.Fatal(err)
		}
		n := s.unreadItems
		s.close()
		if n != accepted.Load() {
			t.Fatalf("round %d: Send accepted %d items, the spill file holds %d", round, accepted.Load(), n)
		}
	}
}

// TestManyLongURLsOneDatagram: long URLs that differ only at the end
// front-code to a few bytes each, so one datagram can name hundreds of
// kilobytes; the receiver refuses more than maxDecoded, so the sender
// must not pack more, or the batch is dropped as malformed at every
// retransmission and never acknowledged. A SortWindow beyond maxDecoded
// sorts enough of them together to fill a datagram.
func TestManyLongURLsOneDatagram(t *testing.T) {
	cl := newCluster(t, 2, func(i int, c *Config) { c.SortWindow = 1 << 20 })
	prefix := "http://cal.example/" + strings.Repeat("/", 1000) // '/' has the shortest code
	const n = 300
	for k := range n {
		if err := cl.eps[0].Send(2, 1, []byte(fmt.Sprintf("%s%04d", prefix, k))); err != nil {
			t.Fatal(err)
		}
	}
	cl.eps[0].Flush()
	waitUntil(t, 10*time.Second, "the backlog drained", func() bool { return cl.eps[0].Backlog(2) == 0 })
	if c, d := cl.sinks[1].count(), cl.eps[1].Stats().Drops["malformed"]; c != n || d != 0 {
		t.Fatalf("%d items delivered, %d datagrams dropped as malformed; want %d and 0", c, d, n)
	}
}

// TestSendErrorLogged: a peer the socket cannot send to (here an IPv6
// address for an IPv4 socket) fails every datagram; the first failure is
// logged naming the peer and the error, once, and every one is counted.
// Node 3 is there for a send after Close.
func TestSendErrorLogged(t *testing.T) {
	conns, addrs := loopbackConns(t, 3)
	conns[2].Close()
	addrs[2] = netip.MustParseAddrPort("[::1]:9")
	var mu sync.Mutex
	var logs []string
	ep, err := New(Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, FlushInterval: 5 * time.Millisecond, RetransmitMin: 10 * time.Millisecond,
		Logf: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(f, a...))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ep.Send(2, 0, []byte("http://a.example/"))
	ep.Flush()
	waitUntil(t, 10*time.Second, "several failed sends", func() bool { return ep.Stats().SendErrors >= 3 })
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "sending to node 2 ([::1]:9): ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d log lines about failed sends to node 2, want 1: %q", n, logs)
	}
	// A send after Close closed the socket (a tick under way) is no news.
	mu.Unlock()
	ep.Close()
	ep.writeRaw([]byte("x"), ep.peers[3])
	mu.Lock()
	for _, l := range logs {
		if strings.Contains(l, "node 3") {
			t.Errorf("logged: %s", l)
		}
	}
}

// TestReceiverCloseAcks: a clean restart of the receiver delivers every
// item exactly once, also when batches arrived out of order: the batches
// acknowledged above the cumulative position (which the state file does
// not keep) have their acknowledgement sent by Close, so the sender does
// not send them to the receiver's next start. Node 2 sends three batches;
// the first is lost once, and node 1's acknowledgements are lost until it
// closes.
func TestReceiverCloseAcks(t *testing.T) {
	conns, addrs := loopbackConns(t, 2)
	dir := t.TempDir()
	s1 := newSink()
	var deaf atomic.Bool // node 1's datagrams are lost
	deaf.Store(true)
	cfg1 := Config{Self: 1, Peers: addrs, Conn: conns[0], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: s1.handle, AckOnReturn: true, SpillDir: dir,
		Hook: func(b []byte, _ netip.AddrPort, send func([]byte)) {
			if !deaf.Load() {
				send(b)
			}
		}}
	ep1, err := New(cfg1)
	if err != nil {
		t.Fatal(err)
	}
	var lost atomic.Bool
	ep2, err := New(Config{Self: 2, Peers: addrs, Conn: conns[1], Keys: []Key{testKey}, SendKey: testKey.ID,
		Handler: func(NodeID, uint64, []Item) {}, AckOnReturn: true, SpillDir: t.TempDir(),
		RetransmitMin: 200 * time.Millisecond,
		Hook: func(b []byte, _ netip.AddrPort, send func([]byte)) {
			if b[2]&flagData != 0 && binary.BigEndian.Uint32(b[24:]) == 1 && lost.CompareAndSwap(false, true) {
				return
			}
			send(b)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep2.Close()
	// Node 2 knows node 1's epoch once node 1's first datagram gets through.
	deaf.Store(false)
	ep1.Send(2, 0, []byte("http://hello.example/"))
	ep1.Flush()
	waitUntil(t, 5*time.Second, "node 2 knows node 1", func() bool { return ep2.Stats().Peers[0].Epoch == ep1.Epoch() && ep1.Backlog(2) == 0 })
	deaf.Store(true)
	for k := range 3 {
		ep2.Send(1, 0, []byte(fmt.Sprintf("http://b%d.example/", k)))
		ep2.Flush()
	}
	waitUntil(t, 5*time.Second, "batches 2 and 3 delivered", func() bool { return s1.count() == 2 })
	deaf.Store(false)
	a1 := conns[0].LocalAddr().(*net.UDPAddr)
	if err := ep1.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", a1)
	if err != nil {
		t.Fatal(err)
	}
	cfg1.Conn = c
	if ep1, err = New(cfg1); err != nil {
		t.Fatal(err)
	}
	defer ep1.Close()
	waitUntil(t, 10*time.Second, "node 2's backlog drained", func() bool { return ep2.Backlog(1) == 0 })
	s1.mu.Lock()
	defer s1.mu.Unlock()
	for k := range 3 {
		if n := s1.got[fmt.Sprintf("2 0 http://b%d.example/", k)]; n != 1 {
			t.Errorf("batch %d delivered %d times, want once", k+1, n)
		}
	}
}
