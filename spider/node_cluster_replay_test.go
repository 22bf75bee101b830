package spider

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// Header fields of a datagram the replay test reads (communicator package
// doc, "Datagram"): flags bit 0 = carries items, the sender's epoch, the
// receiver's epoch as the sender saw it, the sequence number.
const (
	dgFlags     = 2
	dgEpoch     = 8
	dgPeerEpoch = 16
	dgSeq       = 24
)

// wireTap is a WireHook on the peer: it passes everything and keeps a copy
// of each data datagram, by the sequence number it carries; while hold is
// set it loses the data datagrams instead (keeping their copies), so the
// test has datagrams whose items never reached the node.
type wireTap struct {
	mu   sync.Mutex
	hold bool
	got  map[uint32][]byte // seq -> last copy (a resend names a newer ack)
	held map[uint32][]byte
}

func newWireTap() *wireTap {
	return &wireTap{got: map[uint32][]byte{}, held: map[uint32][]byte{}}
}

func (w *wireTap) hook(b []byte, _ netip.AddrPort, send func([]byte)) {
	if b[dgFlags]&1 == 0 {
		send(b)
		return
	}
	seq := binary.BigEndian.Uint32(b[dgSeq:])
	w.mu.Lock()
	hold := w.hold
	if hold {
		w.held[seq] = bytes.Clone(b)
	} else {
		w.got[seq] = bytes.Clone(b)
	}
	w.mu.Unlock()
	if !hold {
		send(b)
	}
}

// take returns the copies kept (delivered ones, or held ones) and forgets
// them.
func (w *wireTap) take(held bool) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.got
	if held {
		m = w.held
	}
	var out [][]byte
	for _, b := range m {
		out = append(out, b)
	}
	clear(m)
	return out
}

func (w *wireTap) setHold(h bool) {
	w.mu.Lock()
	w.hold = h
	w.mu.Unlock()
}

// TestClusterReplayed: genuine datagrams of a peer, recorded on the wire
// and sent to a node again later from the peer's own address (while the
// peer runs, while it is down, after it restarted, after the node
// restarted), are dropped and counted as replayed, on the status page
// (peers[].dropped_replayed) and in the communicator's drop counts; none
// of their URLs is admitted a second time, and the URLs of datagrams that
// never reached the node before the peer restarted are not admitted at
// all. The one datagram that is delivered is the first copy to arrive of a
// batch the live peer sent and the network lost: that is a late delivery,
// not a replay, and its URLs are admitted once.
//
// The peer is a communicator endpoint with the cluster's secret on node
// 1's address, which is what a node sends with; the test then decides
// which URLs it sends and when.
func TestClusterReplayed(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 4, Seed: 5, MaxPages: 4, Seeds: 1, Plain: true}, &log)
	const depth = 2
	cfgs := clusterNodes(t, 2, srv, lookup, depth, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	a0, a1 := addrs[0], addrs[1]
	part := cfgs[0].Cluster.Config.Partitioner()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// urls returns n URLs node 0 owns, distinct per name, varied enough
	// to fill several datagrams; their hosts do not resolve, so node 0
	// admits them and then fails to fetch them.
	urls := func(name string, n int) []string {
		var out []string
		for i := 0; len(out) < n; i++ {
			u := fmt.Sprintf("http://replay-%s-%d.example/%x/page-%d.html", name, i%7, uint64(i)*0x9e3779b97f4a7c15, i)
			if part.Owner(u) == 0 {
				out = append(out, u)
			}
		}
		return out
	}

	// The node, run until the test stops it.
	var n *Node
	var stop context.CancelFunc
	var done chan error
	start := func() {
		t.Helper()
		var err error
		if n, err = OpenNode(cfgs[0]); err != nil {
			t.Fatal(err)
		}
		var runCtx context.Context
		runCtx, stop = context.WithCancel(ctx)
		done = make(chan error, 1)
		go func() {
			_, err := n.Run(runCtx)
			done <- err
		}()
	}
	halt := func() {
		t.Helper()
		stop()
		<-done
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	start()
	defer func() {
		if n != nil {
			stop()
			<-done
			n.Close()
		}
	}()

	// peerDrops is what node 0 counts against node 1, by reason.
	peerDrops := func() map[string]uint64 {
		for _, p := range n.ClusterStats().Comm.Peers {
			if p.ID == 1 {
				return p.Drops
			}
		}
		t.Fatal("node 0 has no peer 1")
		return nil
	}
	replayed := func(d map[string]uint64) uint64 { return d["stale_epoch"] + d["duplicate"] + d["handshake"] }

	// The peer, with the wire tap. Its retransmission timer is far beyond
	// the test, so every data datagram node 0 drops is one the test sent
	// (a batch whose first copy the node drops for an unknown epoch goes
	// again as soon as the peer learns the epoch, without the timer).
	secret := cfgs[0].Cluster.Secret
	tap := newWireTap()
	peer := func(conn *net.UDPConn) *communicator.Endpoint {
		t.Helper()
		ep, err := communicator.New(communicator.Config{Self: 1, Conn: conn,
			Peers: map[communicator.NodeID]netip.AddrPort{0: a0, 1: a1},
			Keys:  []communicator.Key{{ID: 1, Secret: secret}}, SendKey: 1,
			Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true,
			FlushInterval: 10 * time.Millisecond, RetransmitMin: time.Minute, RetransmitMax: time.Minute,
			Hook: tap.hook})
		if err != nil {
			t.Fatal(err)
		}
		// As a node does at its start: URLs of a peer whose cluster
		// block is not known to match are not acknowledged.
		if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: cfgs[1].Cluster.Config.Canonical(), Epoch: ep.Epoch(), Sent: time.Now()}, nonce())); err != nil {
			t.Fatal(err)
		}
		return ep
	}
	send := func(ep *communicator.Endpoint, us []string) {
		t.Helper()
		for _, u := range us {
			if err := ep.Send(0, 1, []byte(u)); err != nil {
				t.Fatal(err)
			}
		}
		ep.Flush()
	}
	admitted := func(us []string) (k int) {
		for _, u := range us {
			if _, ok := n.tree.FindString(u); ok {
				k++
			}
		}
		return k
	}
	// deliver sends us genuinely and waits until node 0 has them and the
	// peer has their acknowledgement.
	received := uint64(0)
	deliver := func(ep *communicator.Endpoint, us []string) {
		t.Helper()
		send(ep, us)
		received += uint64(len(us))
		waitFor(t, "genuine delivery", time.Minute, func() bool {
			return n.ClusterStats().ReceivedURLs == received && ep.Backlog(0) == 0
		})
		if k := admitted(us); k != len(us) {
			t.Fatalf("%d of %d genuine URLs admitted", k, len(us))
		}
	}

	// replay sends copies from conn (node 1's address) and waits until
	// node 0 has dropped every one of them for reason; nothing of theirs
	// may be received or added to the tree.
	replay := func(what string, conn *net.UDPConn, dgs [][]byte, reason string) {
		t.Helper()
		if len(dgs) == 0 {
			t.Fatalf("%s: nothing recorded", what)
		}
		before, urls, delivered := peerDrops(), n.Counters().URLs, n.ClusterStats().Comm.Delivered
		total := n.ClusterStats().Comm.Drops[reason]
		for _, b := range dgs {
			if _, err := conn.WriteToUDPAddrPort(b, a0); err != nil {
				t.Fatal(err)
			}
		}
		want := before[reason] + uint64(len(dgs))
		waitFor(t, fmt.Sprintf("%s: %d datagrams dropped as %s", what, len(dgs), reason), time.Minute, func() bool { return peerDrops()[reason] >= want })
		after := peerDrops()
		for r, v := range after {
			if r != reason && v != before[r] {
				t.Errorf("%s: %s drops %d -> %d; want only %s", what, r, before[r], v, reason)
			}
		}
		if after[reason] != want {
			t.Errorf("%s: %s drops %d, want %d", what, reason, after[reason], want)
		}
		cs := n.ClusterStats()
		if cs.Comm.Drops[reason] != total+uint64(len(dgs)) {
			t.Errorf("%s: the communicator's %s drops %d, want %d", what, reason, cs.Comm.Drops[reason], total+uint64(len(dgs)))
		}
		if cs.ReceivedURLs != received || cs.Comm.Delivered != delivered || n.Counters().URLs != urls {
			t.Errorf("%s: received %d URLs (want %d), %d batches delivered (want %d), %d URLs known (want %d)",
				what, cs.ReceivedURLs, received, cs.Comm.Delivered, delivered, n.Counters().URLs, urls)
		}
		st := n.Status()
		checkFields(t, st)
		if len(st.Peers) != 1 || st.Peers[0].Node != 1 || st.Peers[0].DroppedReplayed != replayed(after) || st.Peers[0].DroppedForged != 0 {
			t.Errorf("%s: peers on the status page %+v; want node 1 with dropped_replayed %d, nothing forged", what, st.Peers, replayed(after))
		}
		if p := n.ClusterStats().Comm.Peers[0]; len(st.Peers) == 1 && st.Peers[0].AcksMerged != p.AcksMerged {
			t.Errorf("%s: acks_merged %d on the status page; the communicator counts %d", what, st.Peers[0].AcksMerged, p.AcksMerged)
		}
	}
	epochOf := func(b []byte) uint64 { return binary.BigEndian.Uint64(b[dgEpoch:]) }

	// 1. The peer's first run (epoch e1): batches A delivered.
	conn1 := cfgs[1].Cluster.Comm.Conn
	ep := peer(conn1)
	e1 := ep.Epoch()
	A := urls("a", 200)
	deliver(ep, A)
	recA := tap.take(false)
	// Copies the node dropped because they named no epoch of it (the
	// peer's first datagram) are replays of a handshake; keep the ones
	// that were delivered.
	self0 := n.ClusterStats().Comm.Epoch
	recA = keep(recA, func(b []byte) bool { return binary.BigEndian.Uint64(b[dgPeerEpoch:]) == self0 })
	replay("A again, the peer running", conn1, recA, "duplicate")

	// 2. D: the network loses a batch; a copy sent by someone else
	// arrives first. It is the batch's first arrival: delivered once,
	// and its copies after that are duplicates.
	D := urls("d", 5)
	tap.setHold(true)
	send(ep, D)
	waitFor(t, "D sent", time.Minute, func() bool { return len(heldCopies(tap)) > 0 && ep.Backlog(0) == len(D) })
	tap.setHold(false)
	recD := tap.take(true)
	for _, b := range recD {
		conn1.WriteToUDPAddrPort(b, a0)
	}
	received += uint64(len(D))
	waitFor(t, "D's late copy delivered and acknowledged", time.Minute, func() bool {
		return n.ClusterStats().ReceivedURLs == received && ep.Backlog(0) == 0
	})
	if k := admitted(D); k != len(D) {
		t.Fatalf("%d of %d URLs of the late batch admitted", k, len(D))
	}
	replay("D again", conn1, recD, "duplicate")

	// 3. C: lost on the wire too, and then the peer stops (no spill
	// directory: its items are gone with it).
	C := urls("c", 5)
	tap.setHold(true)
	send(ep, C)
	waitFor(t, "C sent", time.Minute, func() bool { return len(heldCopies(tap)) > 0 && ep.Backlog(0) == len(C) })
	recC := tap.take(true)
	tap.setHold(false)
	if err := ep.Close(); err == nil {
		t.Fatal("the peer closed without saying that C's items were lost")
	}

	// 4. The peer is down; someone on its address sends A again.
	down, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a1))
	if err != nil {
		t.Fatal(err)
	}
	replay("A again, the peer down", down, recA, "duplicate")
	down.Close()

	// 5. The peer restarts (epoch e2 > e1) and delivers B. Anything of
	// e1 is now stale, C's never-delivered batch included.
	conn1, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(a1))
	if err != nil {
		t.Fatal(err)
	}
	ep = peer(conn1)
	defer ep.Close()
	if ep.Epoch() <= e1 {
		t.Fatalf("restarted peer's epoch %d not after %d", ep.Epoch(), e1)
	}
	B := urls("b", 100)
	deliver(ep, B)
	recB := keep(tap.take(false), func(b []byte) bool {
		return epochOf(b) == ep.Epoch() && binary.BigEndian.Uint64(b[dgPeerEpoch:]) == self0
	})
	replay("A after the peer's restart", conn1, recA, "stale_epoch")
	replay("C after the peer's restart", conn1, recC, "stale_epoch")
	if k := admitted(C); k != 0 {
		t.Errorf("%d URLs of C, never delivered before the peer restarted, admitted from replays", k)
	}
	replay("B again", conn1, recB, "duplicate")

	// 6. The node restarts: B's copies name its old epoch (the
	// handshake drops them and tells the sender the new one), A's and C's
	// the peer's old epoch, which the node's state file remembers.
	halt()
	c0, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a0))
	if err != nil {
		t.Fatal(err)
	}
	cfgs[0].Cluster.Comm.Conn = c0
	start()
	if e := n.ClusterStats().Comm.Epoch; e <= self0 {
		t.Fatalf("restarted node's epoch %d not after %d", e, self0)
	}
	// The counts start again with the process; the tree keeps its URLs.
	received = 0
	replay("B after the node's restart", conn1, recB, "handshake")
	replay("A after the node's restart", conn1, recA, "stale_epoch")
	replay("C after the node's restart", conn1, recC, "stale_epoch")
	if k := admitted(C); k != 0 {
		t.Errorf("%d URLs of C admitted after the node's restart", k)
	}
	if k := admitted(A) + admitted(B) + admitted(D); k != len(A)+len(B)+len(D) {
		t.Errorf("%d of the %d URLs delivered are in the tree after the node's restart", k, len(A)+len(B)+len(D))
	}
	t.Logf("replayed %d, %d, %d, %d datagrams of A, B, C, D; node 0's drops %v", len(recA), len(recB), len(recC), len(recD), nonzero(n.ClusterStats().Comm.Drops))
}

func keep(dgs [][]byte, f func([]byte) bool) [][]byte {
	var out [][]byte
	for _, b := range dgs {
		if f(b) {
			out = append(out, b)
		}
	}
	return out
}

func heldCopies(w *wireTap) map[uint32][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.held)
}
