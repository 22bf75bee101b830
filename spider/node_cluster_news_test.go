package spider

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterNoNewsForARestartedCoordinator: node 1 answered node 0's
// probe busy (its cluster block differed), and node 0 restarted before
// node 1 turned idle (the same block). Node 1 then told node 0's new run
// it was idle now, naming the probe of the run before: node 0 ignored it
// as a state of then, logged it as one "answering a probe of this node's
// run before a restart" and counted it in node 1's stale_control, though
// it answered nothing and told a run that never probed node 1 nothing.
// Node 1 now sends no such word (the new run probes it when idle itself)
// and answers the new run's probe. Node 0 is a bare endpoint, restarted
// on its address.
func TestClusterNoNewsForARestartedCoordinator(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[1].Seeds = nil
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	type stateMsg struct {
		round, epoch uint64
		idle         bool
	}
	states := make(chan stateMsg, 64)
	open := func(conn *net.UDPConn) *communicator.Endpoint {
		t.Helper()
		ep, err := communicator.New(communicator.Config{Self: 0, Conn: conn,
			Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
			Keys:  []communicator.Key{{ID: 1, Secret: cfgs[0].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
			Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
				for _, it := range items {
					if it.Tag != cluster.TagState {
						continue
					}
					r, e, st, err := cluster.DecodeState(it.URL)
					if err != nil {
						t.Errorf("node 1's state %x: %v", it.URL, err)
						continue
					}
					states <- stateMsg{r, e, st.Idle}
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	ep := open(cfgs[0].Cluster.Comm.Conn)
	defer func() { ep.Close() }()
	send := func(tag uint64, m []byte) {
		t.Helper()
		if err := ep.Send(1, tag, m); err != nil {
			t.Fatal(err)
		}
		ep.FlushTo(1)
	}
	hello := func(block cluster.Config) {
		send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: block.Canonical(), Epoch: ep.Epoch()}, nonce()))
	}
	answer := func(what string) stateMsg {
		t.Helper()
		select {
		case s := <-states:
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("no state from node 1: %s", what)
		}
		return stateMsg{}
	}

	n1, err := OpenNode(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		_, err := n1.Run(ctx)
		ran <- err
	}()
	defer func() {
		cancel()
		if err := <-ran; err != nil && !errors.Is(err, ErrInterrupted) {
			t.Errorf("node 1: %v", err)
		}
	}()

	// Node 0's run before: a block that differs, a probe answered busy.
	differs := cfgs[0].Cluster.Config
	differs.Partition = cluster.ByHost
	hello(differs)
	waitFor(t, "node 1 refusing", 30*time.Second, func() bool { return n1.ClusterStats().Refusing })
	before := ep.Epoch()
	send(cluster.TagProbe, cluster.EncodeProbe(1, before))
	if s := answer("to the run before's probe"); s != (stateMsg{1, before, false}) {
		t.Fatalf("node 1's answer to the run before's probe: %+v; want busy, round 1, epoch %d", s, before)
	}
	waitFor(t, "node 1's answer acknowledged", 30*time.Second, func() bool { return n1.cl.ep.Backlog(0) == 0 })
	// And the probe: node 1 acknowledges it after the datagram with its
	// answer has left, and the close below reported it undelivered.
	waitFor(t, "node 0's probe acknowledged", 30*time.Second, func() bool { return ep.Backlog(1) == 0 })

	// Node 0's new run: the same block; node 1 turns idle.
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // a later epoch (milliseconds)
	ep = open(nil)
	hello(cfgs[0].Cluster.Config)
	waitFor(t, "node 1 no longer refusing", 30*time.Second, func() bool { return !n1.ClusterStats().Refusing })
	select {
	case s := <-states:
		t.Fatalf("node 1 sent node 0's new run (epoch %d) %+v, of the probe of its run before (epoch %d)", ep.Epoch(), s, before)
	case <-time.After(time.Second): // the word came at once
	}
	send(cluster.TagProbe, cluster.EncodeProbe(1, ep.Epoch()))
	if s := answer("to the new run's probe"); s != (stateMsg{1, ep.Epoch(), true}) {
		t.Errorf("node 1's answer to the new run's probe: %+v; want idle, round 1, epoch %d", s, ep.Epoch())
	}
}
