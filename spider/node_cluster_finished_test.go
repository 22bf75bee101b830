package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterStaleFinished: node 0's "finished" of its run before a
// restart, not acknowledged when it stopped, comes again from its spill
// file; taken for this run's, it ended node 1 at once, whatever work its
// run had (a test of the late end saw it end so before the peers' hellos
// were heard). It is ignored; this run's "finished" ends the node.
func TestClusterStaleFinished(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 3, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var said []string
	cfgs[1].Logf = func(f string, a ...any) {
		logMu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		logMu.Unlock()
	}
	// Node 0 is a bare endpoint.
	ep0, err := communicator.New(communicator.Config{Self: 0, Conn: cfgs[0].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[0].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(communicator.NodeID, uint64, []communicator.Item) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep0.Close()
	n1, err := OpenNode(cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		sum *NodeSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := n1.Run(ctx)
		done <- result{sum, err}
	}()
	send := func(tag uint64, b []byte) {
		t.Helper()
		if err := ep0.Send(1, tag, b); err != nil {
			t.Fatal(err)
		}
		ep0.FlushTo(1)
	}
	send(cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: cfgs[0].Cluster.Config.Canonical(), Epoch: ep0.Epoch()}, nonce()))
	send(cluster.TagFinished, cluster.EncodeRound(7))                         // protocol 2's, of a build before
	send(cluster.TagFinished, cluster.EncodeFinished(7, ep0.Epoch()-(1<<16))) // of node 0's run before
	deadline := time.Now().Add(20 * time.Second)
	for n1.ClusterStats().StaleFinished < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the stale \"finished\" not seen: %+v", n1.ClusterStats())
		}
		select {
		case r := <-done:
			t.Fatalf("node 1 ended on a \"finished\" of node 0's run before: %+v, %v", r.sum, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n1.ClusterStats().Over {
		t.Fatal("node 1 took a stale \"finished\" for the end")
	}
	logMu.Lock()
	if !strings.Contains(strings.Join(said, "\n"), "of its run before a restart ignored") {
		t.Errorf("the stale \"finished\" not said: %q", said)
	}
	logMu.Unlock()
	send(cluster.TagFinished, cluster.EncodeFinished(7, ep0.Epoch()))
	select {
	case r := <-done:
		if r.err != nil || !r.sum.Finished {
			t.Errorf("node 1 after this run's \"finished\": %+v, %v", r.sum, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("node 1 still runs 20 s after this run's \"finished\"")
	}
}
