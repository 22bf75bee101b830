package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterHoldIsPerPeer: node 2's block gives URLs other owners, so
// node 0 holds node 2's URLs unacknowledged (they wait in its spill file
// for a node restarted right). Node 1's URLs, delivered after them, are
// acknowledged all the same: a held peer does not stall the others' acks
// (which would leave node 1 retransmitting and, past its down timeout,
// showing node 0 down). Nodes 1 and 2 are bare endpoints.
func TestClusterHoldIsPerPeer(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 3, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		n0.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	peers := map[communicator.NodeID]netip.AddrPort{}
	for id, a := range addrs {
		peers[communicator.NodeID(id)] = a
	}
	part := cfgs[0].Cluster.Config.Partitioner()
	url := func(i int) []byte {
		for ; ; i++ {
			if u := fmt.Sprintf("http://held-%d.example/", i); part.Owner(u) == 0 {
				return []byte(u)
			}
		}
	}
	var eps []*communicator.Endpoint
	for id := 1; id <= 2; id++ {
		ep, err := communicator.New(communicator.Config{Self: communicator.NodeID(id), Conn: cfgs[id].Cluster.Comm.Conn,
			Peers: peers, Keys: []communicator.Key{{ID: 1, Secret: cfgs[id].Cluster.Secret}}, SendKey: 1,
			Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		eps = append(eps, ep)
	}
	send := func(ep *communicator.Endpoint, tag uint64, b []byte) {
		t.Helper()
		if err := ep.Send(0, tag, b); err != nil {
			t.Fatal(err)
		}
		ep.Flush()
	}
	other := cfgs[2].Cluster.Config
	other.Partition = cluster.ByHost
	send(eps[1], cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: other.Canonical(), Epoch: eps[1].Epoch()}, nonce()))
	waitFor(t, "node 2's hello", time.Minute, func() bool { return eps[1].Backlog(0) == 0 && n0.ClusterStats().Refusing })
	send(eps[1], 1, url(0))
	waitFor(t, "node 2's URL", time.Minute, func() bool { return n0.ClusterStats().ReceivedURLs == 1 })

	send(eps[0], cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: cfgs[1].Cluster.Config.Canonical(), Epoch: eps[0].Epoch()}, nonce()))
	waitFor(t, "node 1's hello acknowledged", time.Minute, func() bool { return eps[0].Backlog(0) == 0 })
	send(eps[0], 1, url(1000))
	waitFor(t, "node 1's URL acknowledged, node 2's held", time.Minute, func() bool { return eps[0].Backlog(0) == 0 })
	if b := eps[1].Backlog(0); b == 0 {
		t.Errorf("node 2's URL acknowledged, though its block gives other owners")
	}
}
