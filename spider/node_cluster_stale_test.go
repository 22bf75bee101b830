package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterStaleState: node 1's answer to a probe of node 0's run
// before a restart (node 0 stopped before it came) waits in node 1's
// window and is sent again once node 1 hears node 0's new epoch. Arriving
// while node 0's new run has the round of the same number open, it was
// taken for node 1's answer to it: a state of then, idle, of a node that
// may have work now; two such ended the crawl while node 1 worked. The
// state echoes the epoch of the probe it answers, and node 0 ignores one
// of another run (StaleState); node 1's answers to this run's probes end
// the crawl. Node 1 is a bare endpoint whose datagrams carrying items are
// held back while cut, as a loss would, until node 0's round is open.
func TestClusterStaleState(t *testing.T) {
	peer := newBarePeer(t, "")
	cfgs, send, next := peer.cfgs, peer.send, peer.next
	defer func() { peer.ep.Close() }()
	peer.hello()

	// Node 0's run before: its first probe, unanswered until it stopped.
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n0.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if _, err := n0.Run(ctx); err != nil && !errors.Is(err, ErrInterrupted) {
			t.Errorf("node 0's run before: %v", err)
		}
	}()
	before := next("its run before")
	cancel()
	<-ran
	peer.cut.Store(true)
	send(cluster.TagState, cluster.EncodeState(before.round, before.epoch, cluster.State{Idle: true, Epoch: peer.ep.Epoch()}))

	// This run: the answer of then held back until the round of the same
	// number is open.
	n0 = reopenNode(t, cfgs, 0, n0)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		sum *NodeSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := n0.Run(ctx)
		done <- result{sum, err}
	}()
	// Node 0's probe of its run before may come again from its spill file
	// (node 1 acknowledged it, but node 0 stopped before it heard so):
	// answered as a node would, held back too, and ignored as well.
	stale := uint64(1)
	p := next("this run")
	for ; p.epoch == before.epoch; p = next("this run") {
		send(cluster.TagState, cluster.EncodeState(p.round, p.epoch, cluster.State{Idle: true, Epoch: peer.ep.Epoch()}))
		stale++
	}
	if p.round != before.round {
		t.Fatalf("node 0's first probe of this run: round %d epoch %d; its run before's: round %d epoch %d", p.round, p.epoch, before.round, before.epoch)
	}
	peer.cut.Store(false)
	waitFor(t, "node 1's answer of then sent again", 30*time.Second, func() bool { return peer.ep.Backlog(0) == 0 })
	select {
	case p2 := <-peer.probes:
		t.Fatalf("node 0 took node 1's answer to its run before's probe for this run's round %d: probed round %d", p.round, p2.round)
	case r := <-done:
		t.Fatalf("node 0 ended on node 1's answer to its run before's probe: %+v, %v", r.sum, r.err)
	case <-time.After(500 * time.Millisecond): // 10 rounds' worth (RoundEvery)
	}
	// Answers alike are sent once (the communicator's cache of items sent).
	if s := n0.ClusterStats(); s.StaleState < 1 || s.StaleState > stale {
		t.Errorf("node 0: StaleState %d, want 1 to %d", s.StaleState, stale)
	}
	// This run's answers end the crawl.
	for {
		send(cluster.TagState, cluster.EncodeState(p.round, p.epoch, cluster.State{Idle: true, Epoch: peer.ep.Epoch()}))
		select {
		case p = <-peer.probes:
			continue
		case fin := <-peer.finished:
			r, e, err := cluster.DecodeFinished(fin)
			if err != nil {
				t.Fatal(err)
			}
			send(cluster.TagBye, cluster.EncodeBye(r, e))
			if r := <-done; r.err != nil || !r.sum.Finished {
				t.Errorf("node 0 after node 1's answers: %+v, %v", r.sum, r.err)
			}
		case r := <-done:
			if r.err != nil || !r.sum.Finished {
				t.Errorf("node 0 after node 1's answers: %+v, %v", r.sum, r.err)
			}
		case <-ctx.Done():
			t.Fatal("node 0 did not end on node 1's answers to this run's probes")
		}
		break
	}
}

// TestClusterPeerRestartState: node 1's answer to node 0's probe, of node
// 1's run before a restart, waits in its spill file and is sent after the
// restart to node 0's same run. Node 0 took it for node 1's state now and
// compared the next round's answer, of node 1's new run, with it: the
// generations of two runs, each counted from 0, equal by chance, ended
// the crawl on one round of the new run, whose restart may have given it
// work the round before never saw. A state says the run of its sender,
// and two rounds match only with the same run's; one of a run older than
// the sender's newest heard is taken as busy (StaleState). The round it
// completes busy is followed by the next at once: node 1's new run never
// had its probe, so owes node 0 no word when idle, and node 0 waited its
// back-off, up to 4 RoundEvery (an hour here: the test timed out). Node 1
// is a bare endpoint, restarted on its spill directory.
func TestClusterPeerRestartState(t *testing.T) {
	peer := newBarePeer(t, t.TempDir())
	cfgs, send, next := peer.cfgs, peer.send, peer.next
	cfgs[0].Cluster.RoundEvery = time.Hour
	defer func() { peer.ep.Close() }()
	var logMu sync.Mutex
	var said []string
	cfgs[0].Logf = func(f string, a ...any) {
		logMu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		logMu.Unlock()
	}
	peer.hello()
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		sum *NodeSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := n0.Run(ctx)
		done <- result{sum, err}
	}()

	// Node 1's run before: it takes the first probe (acknowledged) and
	// stops before its answer left.
	p := next("node 1's run before")
	peer.cut.Store(true)
	const gen = 5 // both runs', by chance
	send(cluster.TagState, cluster.EncodeState(p.round, p.epoch, cluster.State{Idle: true, Gen: gen, Epoch: peer.ep.Epoch()}))
	waitFor(t, "node 1's acknowledgement of the probe", 30*time.Second, func() bool { return n0.cl.ep.Backlog(1) == 0 })
	if err := peer.ep.Close(); err != nil {
		t.Fatal(err)
	}
	peer.cut.Store(false)

	// Its new run sends that answer again from the spill file, then
	// answers node 0's probes with the new run's state.
	peer.open(nil)
	peer.hello()
	answered := 0
	for {
		select {
		case p = <-peer.probes:
			answered++
			send(cluster.TagState, cluster.EncodeState(p.round, p.epoch, cluster.State{Idle: true, Gen: gen, Epoch: peer.ep.Epoch()}))
			continue
		case fin := <-peer.finished:
			r, e, err := cluster.DecodeFinished(fin)
			if err != nil {
				t.Fatal(err)
			}
			send(cluster.TagBye, cluster.EncodeBye(r, e))
		case <-time.After(20 * time.Second):
			t.Fatalf("node 0 started no round for 20 s after node 1's new run answered %d: it waits its back-off after the round node 1's state of its run before completed busy", answered)
		}
		break
	}
	if r := <-done; r.err != nil || !r.sum.Finished {
		t.Errorf("node 0: %+v, %v", r.sum, r.err)
	}
	if answered < 2 {
		t.Errorf("node 0 ended after %d round(s) of node 1's new run: it took the state of node 1's run before for one", answered)
	}
	s := n0.ClusterStats()
	if s.StaleState != 1 {
		t.Errorf("node 0: StaleState %d, want 1 (node 1's answer of its run before)", s.StaleState)
	}
	// Seen by the operator: logged, on the status page, in the summary.
	if ps := n0.Status().Peers; len(ps) != 1 || ps[0].StaleControl != 1 {
		t.Errorf("node 0's status page: peers %+v; want node 1 with stale_control 1", ps)
	}
	if l := s.StaleLine(); !strings.Contains(l, "0 byes and 1 states") {
		t.Errorf("node 0's summary line %q; want 1 state of a run before", l)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(strings.Join(said, "\n"), "of its run before a restart taken as busy"); n != 1 {
		t.Errorf("node 0 logged node 1's state of its run before %d times; want once: %q", n, said)
	}
}

// barePeer is node 1 of a cluster of two as a bare endpoint, node 0 a node
// with no seeds: it passes on node 0's probes and "finished", and while
// cut holds back its datagrams that carry items, as a loss would.
type barePeer struct {
	t        *testing.T
	cfgs     []NodeConfig
	spill    string // its spill directory, kept across a restart ("": none)
	probes   chan probeOf
	finished chan []byte
	cut      atomic.Bool
	ep       *communicator.Endpoint
}

func newBarePeer(t *testing.T, spill string) *barePeer {
	t.Helper()
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	b := &barePeer{t: t, cfgs: cfgs, spill: spill, probes: make(chan probeOf, 64), finished: make(chan []byte, 4)}
	b.open(cfgs[1].Cluster.Comm.Conn)
	return b
}

// open starts the endpoint on conn (nil: a socket of its own address), a
// restart when one ran before.
func (b *barePeer) open(conn *net.UDPConn) {
	b.t.Helper()
	addrs, err := b.cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		b.t.Fatal(err)
	}
	b.ep, err = communicator.New(communicator.Config{Self: 1, Conn: conn, SpillDir: b.spill,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: b.cfgs[1].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		RetransmitMin: 20 * time.Millisecond, RetransmitMax: 100 * time.Millisecond,
		Hook: func(m []byte, _ netip.AddrPort, send func([]byte)) {
			if b.cut.Load() && len(m) > 2 && m[2]&1 != 0 { // flags: carries items
				return
			}
			send(m)
		},
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				if it.Tag == cluster.TagFinished {
					b.finished <- bytes.Clone(it.URL)
				}
				if it.Tag != cluster.TagProbe {
					continue
				}
				if r, e, err := cluster.DecodeProbe(it.URL); err == nil {
					b.probes <- probeOf{r, e}
				} else {
					b.t.Errorf("node 0's probe %x: %v", it.URL, err)
				}
			}
		}})
	if err != nil {
		b.t.Fatal(err)
	}
}

// send sends node 0 one control message at once.
func (b *barePeer) send(tag uint64, m []byte) {
	b.t.Helper()
	if err := b.ep.Send(0, tag, m); err != nil {
		b.t.Error(err)
	}
	b.ep.FlushTo(0)
}

// hello sends node 0 the hello of this run.
func (b *barePeer) hello() {
	b.send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: b.cfgs[1].Cluster.Config.Canonical(), Epoch: b.ep.Epoch()}, nonce()))
}

// next is node 0's next probe.
func (b *barePeer) next(what string) probeOf {
	b.t.Helper()
	select {
	case p := <-b.probes:
		return p
	case <-time.After(30 * time.Second):
		b.t.Fatalf("no probe from node 0: %s", what)
	}
	return probeOf{}
}
