package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterStartedAfterTheEnd: a node started after its cluster's crawl
// ended waited for ever for peers that were gone. Now, alone, it stops
// once its silent peer has not answered for lateWait, its record saying
// the crawl was over; and a node that missed "finished" (no record) learns
// the end from a peer's answer to its hello, both stopping without the
// third, the crawl finished, nothing fetched.
func TestClusterStartedAfterTheEnd(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 6, Seed: 5, MaxPages: 4, Seeds: 2, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 3, srv, lookup, 2, time.Second, cluster.ByURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCluster(t, ctx, cfgs)

	var logMu sync.Mutex
	var said []string
	for i := range cfgs {
		cfgs[i].Logf = func(f string, a ...any) {
			logMu.Lock()
			said = append(said, fmt.Sprintf("node %d: ", i)+fmt.Sprintf(f, a...))
			logMu.Unlock()
		}
	}
	// run runs the nodes given to their end, or 20 s.
	run := func(what string, ids ...int) {
		t.Helper()
		rebind(t, cfgs)
		var nodes []*Node
		for _, id := range ids {
			n, err := OpenNode(cfgs[id])
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		sums := make([]*NodeSummary, len(nodes))
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() { sums[i], errs[i] = n.Run(ctx) })
		}
		wg.Wait()
		for i, n := range nodes {
			n.Close()
			if errs[i] != nil || !sums[i].Finished || sums[i].Fetched+sums[i].Errors != 0 {
				t.Errorf("%s: node %d: %+v, %v; want finished at once, nothing fetched", what, ids[i], sums[i], errs[i])
			}
		}
		for i := range cfgs {
			if c := cfgs[i].Cluster.Comm.Conn; c != nil {
				c.Close() // (those not opened)
			}
		}
	}
	saying := func(s string) bool {
		logMu.Lock()
		defer logMu.Unlock()
		return strings.Contains(strings.Join(said, "\n"), s)
	}

	// Node 1 alone, its peers gone: it stops after lateWait.
	for i := range cfgs {
		cfgs[i].Cluster.HelloEvery = 200 * time.Millisecond
	}
	run("node 1 alone", 1)
	if !saying("node 1: cluster: the crawl was over before this run (its data directory says so (CLUSTER)), and this node has had nothing to do since; nodes 0, 2 not heard from in 600ms: stopping") {
		t.Errorf("node 1 did not say why it stopped: %q", said)
	}

	// Node 1 missed "finished" (down then): no record of the end. Node 0
	// started too tells it in its answer to node 1's hello, and node 1
	// tells node 0 back; node 2 stays gone, so the coordinator's rounds
	// cannot end it.
	if err := os.Remove(filepath.Join(cfgs[1].Dir, ClusterFile)); err != nil {
		t.Fatal(err)
	}
	run("nodes 0 and 1", 0, 1)
	for _, s := range []string{"node 1: cluster: the crawl was over before this run (node 0 says so), and this node has had nothing to do since; node 0 said so too; node 2 not heard from in 600ms: stopping",
		"node 0: cluster: the crawl was over before this run (its data directory says so (CLUSTER)), and this node has had nothing to do since; node 1 said so too; node 2 not heard from in 600ms: stopping"} {
		if !saying(s) {
			t.Errorf("not said: %q", s)
		}
	}
	if r, err := readClusterRecord(cfgs[1].Dir); err != nil || !r.over {
		t.Errorf("node 1's record after it learned the end: %+v, %v", r, err)
	}

	// Node 1 says hello, not that the crawl is over, and falls silent
	// (stopped itself with its last hello lost): node 0 does not wait for
	// it for ever. Node 1 is a bare endpoint on its address.
	rebind(t, cfgs)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1,
		Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true})
	if err != nil {
		t.Fatal(err)
	}
	cfgs[1].Cluster.Comm.Conn = nil // (the endpoint's)
	cfgs[2].Cluster.Comm.Conn.Close()
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	h := cluster.Hello{Fields: cfgs[1].Cluster.Config.Canonical(), Epoch: ep.Epoch()}
	if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(h, nonce())); err != nil {
		t.Fatal(err)
	}
	ep.Flush()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	sum, err := n0.Run(rctx)
	n0.Close()
	if err != nil || !sum.Finished {
		t.Errorf("node 0, node 1 heard once and silent since: %+v, %v; want finished", sum, err)
	}
	if s := "node 0: cluster: the crawl was over before this run (its data directory says so (CLUSTER)), and this node has had nothing to do since; nodes 1, 2 not heard from in 600ms: stopping"; !saying(s) {
		t.Errorf("not said: %q", s)
	}

	// Node 1, which knows the end, opened with a seed new to it: its
	// first hello, sent before its run looked at the seeds, does not say
	// the crawl is over. Node 0 is a bare endpoint now.
	ep.Close()
	rebind(t, cfgs)
	hellos := make(chan cluster.Hello, 16)
	ep0, err := communicator.New(communicator.Config{Self: 0, Conn: cfgs[0].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[0].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				if h, err := cluster.DecodeHello(it.URL); it.Tag == cluster.TagHello && err == nil {
					hellos <- h
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep0.Close()
	cfgs[2].Cluster.Comm.Conn.Close()
	cfgs[1].Seeds = append(cfgs[1].Seeds, "http://new-seed-after-the-end.test/")
	n1, err := OpenNode(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	epoch := n1.ClusterStats().Comm.Epoch
	for {
		select {
		case h := <-hellos:
			if h.Epoch != epoch {
				continue // from its spill file: of a run before
			}
			if h.Over {
				t.Errorf("node 1's first hello, before its run took its seeds, says the crawl is over")
			}
			return
		case <-time.After(20 * time.Second):
			t.Fatal("no hello from node 1")
		}
	}
}
