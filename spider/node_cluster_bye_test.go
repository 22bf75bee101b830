package spider

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterStaleBye: node 1's bye of an earlier run (it answered node
// 0's "finished" of a crawl resumed since, and node 0 stopped before
// acknowledging it) comes again from node 1's spill file. Arriving once
// node 0's run reached the same round, it was taken for node 1's answer
// to this run's "finished": node 0 ended without node 1's bye, so did
// not name it in NoBye should it have missed the end. It is ignored;
// node 1's bye of this run ends node 0. Node 1 is a bare endpoint.
func TestClusterStaleBye(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 3, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	probes := make(chan [2]uint64, 64)
	finished := make(chan []byte, 4)
	ep1, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				switch it.Tag {
				case cluster.TagProbe:
					if r, e, err := cluster.DecodeProbe(it.URL); err == nil {
						probes <- [2]uint64{r, e}
					}
				case cluster.TagFinished:
					finished <- bytes.Clone(it.URL)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep1.Close()
	send := func(tag uint64, b []byte) {
		if err := ep1.Send(0, tag, b); err != nil {
			t.Error(err)
		}
		ep1.FlushTo(0)
	}
	send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: cfgs[1].Cluster.Config.Canonical(), Epoch: ep1.Epoch()}, nonce()))
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
	var fin []byte
	for fin == nil {
		select {
		case r := <-probes:
			send(cluster.TagState, cluster.EncodeState(r[0], r[1], cluster.State{Idle: true, Epoch: ep1.Epoch()}))
		case fin = <-finished:
		case r := <-done:
			t.Fatalf("node 0 ended before its \"finished\": %+v, %v", r.sum, r.err)
		case <-ctx.Done():
			t.Fatal("node 0 sent no \"finished\"")
		}
	}
	round, epoch, err := cluster.DecodeFinished(fin)
	if err != nil || epoch != n0.cl.ep.Epoch() {
		t.Fatalf("node 0's \"finished\" %x: round %d epoch %d, %v", fin, round, epoch, err)
	}
	// The bye of node 1's run before, answering node 0's "finished" of
	// that run, of the same round: protocol 3's (the round alone), and
	// this protocol's, naming node 0's epoch then.
	send(cluster.TagBye, cluster.EncodeRound(round))
	send(cluster.TagBye, cluster.EncodeBye(round, epoch-1<<16))
	deadline := time.Now().Add(5 * time.Second) // within byeWait
	for n0.ClusterStats().StaleBye < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the stale byes not seen: %+v", n0.ClusterStats())
		}
		select {
		case r := <-done:
			t.Fatalf("node 0 ended on a bye of node 1's run before: %+v, %v", r.sum, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	send(cluster.TagBye, cluster.EncodeBye(round, epoch))
	select {
	case r := <-done:
		if r.err != nil || !r.sum.Finished {
			t.Errorf("node 0 after node 1's bye: %+v, %v", r.sum, r.err)
		}
		if nb := n0.ClusterStats().NoBye; len(nb) != 0 {
			t.Errorf("node 0 names node 1 as not answering: %q", nb)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("node 0 still runs 5 s after node 1's bye")
	}
}
