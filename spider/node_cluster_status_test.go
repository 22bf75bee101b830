package spider

import (
	"bytes"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterPeerQueueLeavesOutHellos: a peer that never came up has only
// the hello a node sends at its open waiting for it, and its status says
// 0 URLs wait (it said 1, which an operator reads as a URL undelivered).
func TestClusterPeerQueueLeavesOutHellos(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 4, Seed: 3, MaxPages: 4, MeanPageSize: 2000, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 2, 2*time.Second, cluster.ByHost)
	// Node 1's socket is bound, but no node reads it: down.
	n, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i := range 40 {
		p := n.ClusterStats().Comm.Peers[0]
		if p.Queued+p.UnackedItems+int(p.SpillItems) == 0 || p.ControlItems == 0 {
			t.Fatalf("check %d: node 1's backlog %+v; want the hello in it, counted as control", i, p)
		}
		ps := n.Status().Peers
		if len(ps) != 1 || ps[0].Node != 1 || ps[0].Queue != 0 {
			t.Fatalf("check %d: peers on the status page %+v; want node 1 with 0 URLs waiting (only hellos are)", i, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
