package spider

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterLostDirAcrossStops: node 1 came back on a new data directory,
// and node 0's communicator learned its new epoch from a datagram before
// node 0's writer took node 1's hello (a hello lost on the wire and sent
// again behind URLs, or a stop, kill -9 included, between the two). The
// communicator saves a peer's epoch on its own (each second, at close);
// node 0 compared the hello's epoch with that, so after a restart it took
// the fresh hello for one of a peer it had heard in that run already, and
// the loss went unreported, the run ending 0. Node 0 keeps the epochs it
// took hellos under in DIR/CLUSTER, written with a loss in one write.
// Node 1 is a bare endpoint on its address.
func TestClusterLostDirAcrossStops(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	block := cfgs[1].Cluster.Config.Canonical()
	conn := cfgs[1].Cluster.Comm.Conn
	var ep *communicator.Endpoint
	// Node 0's hellos asking for node 1's: a real node answers them (its
	// own hello may be lost at node 0's restart).
	asked := make(chan struct{}, 1)
	// start1 starts node 1 again: a new endpoint, a new epoch.
	start1 := func() {
		t.Helper()
		var last uint64
		if ep != nil {
			last = ep.Epoch()
			ep.Close()
			if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[1])); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond) // the epoch is the start's millisecond
		}
		ep, err = communicator.New(communicator.Config{Self: 1, Conn: conn,
			Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
			Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1,
			Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
				for _, it := range items {
					if h, err := cluster.DecodeHello(it.URL); it.Tag == cluster.TagHello && err == nil && h.Want {
						select {
						case asked <- struct{}{}:
						default:
						}
					}
				}
			}, AckOnReturn: true})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Epoch() <= last {
			t.Fatalf("restarted endpoint's epoch %d not after %d", ep.Epoch(), last)
		}
	}
	defer func() { ep.Close() }()
	send := func(tag uint64, b []byte) {
		t.Helper()
		if err := ep.Send(0, tag, b); err != nil {
			t.Fatal(err)
		}
		ep.Flush()
	}
	// hello sends node 1's hello, and again whenever node 0 asks, until
	// taken says it was.
	hello := func(fresh bool, taken func() bool) {
		t.Helper()
		send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: block, Epoch: ep.Epoch(), Fresh: fresh}, nonce()))
		deadline := time.Now().Add(time.Minute)
		for !taken() {
			if time.Now().After(deadline) {
				t.Fatal("node 1's hello not taken")
			}
			select {
			case <-asked:
				send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: block, Epoch: ep.Epoch(), Fresh: fresh}, nonce()))
			case <-time.After(time.Millisecond):
			}
		}
	}
	// run0 runs node 0 (opened again after its first run) until stop
	// returns.
	var n0 *Node
	run0 := func(stop func()) {
		t.Helper()
		if n0 == nil {
			if n0, err = OpenNode(cfgs[0]); err != nil {
				t.Fatal(err)
			}
		} else {
			n0 = reopenNode(t, cfgs, 0, n0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			if _, err := n0.Run(ctx); err != nil && !errors.Is(err, ErrInterrupted) {
				t.Errorf("node 0: %v", err)
			}
		}()
		stop()
		cancel()
		<-ran
	}
	defer func() { n0.Close() }()
	peerEpoch := func() uint64 {
		for _, p := range n0.ClusterStats().Comm.Peers {
			if p.ID == 1 {
				return p.Epoch
			}
		}
		return 0
	}

	// Node 1's first run: node 0 takes its hello.
	start1()
	run0(func() { hello(false, func() bool { return ep.Backlog(0) == 0 }) })
	// Node 1 back on a new directory: node 0's communicator hears it,
	// its hello not yet come, and node 0 stops.
	start1()
	run0(func() {
		owned := ""
		for i := range 1000 {
			if u := "http://x.example/" + string(rune('a'+i%26)) + strings.Repeat("y", i/26); cfgs[0].Cluster.Config.Partitioner().Owner(u) == 0 {
				owned = u
				break
			}
		}
		send(cluster.URLTag(1, 0), []byte(owned))
		waitFor(t, "node 1's new epoch heard", time.Minute, func() bool { return peerEpoch() == ep.Epoch() })
	})
	// Node 0's next run takes the hello.
	run0(func() { hello(true, func() bool { return len(n0.ClusterStats().LostDirs) > 0 || ep.Backlog(0) == 0 }) })
	if l := n0.ClusterStats().LostDirs; len(l) != 1 || !strings.Contains(l[0], "node 1 came back with a new data directory") {
		t.Errorf("node 1 back on a new directory, its hello taken by node 0's next run: lost %q; want node 1 named", l)
	}
}
