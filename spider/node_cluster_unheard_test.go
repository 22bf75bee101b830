package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterUnheardAcrossStops: node 0 took (acknowledged) more than
// unheardHoldMax batches of node 1's URLs before node 1's hello, and
// stopped (kill -9 or not) before the hello came. The count of URLs so
// taken was kept in memory only, so the hello, saying node 1's block
// gives URLs other owners, came to node 0's next run, which had taken
// none: the loss went unsaid and the run ended 0. The count goes to
// DIR/CLUSTER before the URLs are acknowledged. Node 1 is a bare
// endpoint.
func TestClusterUnheardAcrossStops(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n0.Close() }() // (reopened below)
	run := func() (stop func()) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			n0.Run(ctx)
		}()
		return func() {
			cancel()
			<-ran
		}
	}
	stop := run()
	ep, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1,
		Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	part := cfgs[0].Cluster.Config.Partitioner()
	sent := 0
	for i := 0; sent < 2*unheardHoldMax; i++ {
		// Hosts that do not resolve: node 0 admits them and fails them.
		if u := fmt.Sprintf("http://unheard-%d.example/", i); part.Owner(u) == 0 {
			if err := ep.Send(0, 1, []byte(u)); err != nil {
				t.Fatal(err)
			}
			ep.Flush() // a batch each, once node 0's epoch is known
			if sent++; sent == 1 {
				waitFor(t, "the first batch", time.Minute, func() bool { return n0.ClusterStats().ReceivedURLs == 1 })
			}
		}
	}
	waitFor(t, "node 1's URLs acknowledged, unheard", time.Minute, func() bool { return ep.Backlog(0) == 0 })
	stop()
	n0 = reopenNode(t, cfgs, 0, n0)
	stop = run()
	defer stop()
	block := cfgs[1].Cluster.Config
	block.Partition = cluster.ByHost
	if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: block.Canonical(), Epoch: ep.Epoch()}, nonce())); err != nil {
		t.Fatal(err)
	}
	ep.Flush()
	waitFor(t, "node 1's hello taken", time.Minute, func() bool { return n0.ClusterStats().Refusing })
	const want = "node 1's cluster block gives URLs other owners than ours, and "
	cs := n0.ClusterStats()
	var taken int
	if len(cs.LostURLs) == 1 {
		fmt.Sscanf(strings.TrimPrefix(cs.LostURLs[0], want), "%d", &taken)
	}
	if len(cs.LostURLs) != 1 || !strings.HasPrefix(cs.LostURLs[0], want) || taken <= unheardHoldMax || taken > sent {
		t.Errorf("node 0's run after the stop: LostURLs %q; want %q and the URLs taken (%d, of %d sent)", cs.LostURLs, want, taken, sent)
	}
	if r, err := readClusterRecord(cfgs[0].Dir); err != nil || len(r.unheard) != 0 || r.taken[1] != uint64(taken) {
		t.Errorf("node 0's record once node 1's hello came: %+v, %v; want %d URLs of node 1 lost, none waiting for its hello", r, err, taken)
	}
}
