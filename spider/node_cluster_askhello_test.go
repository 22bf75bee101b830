package spider

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// TestClusterHelloLost: node 1's hello, behind URLs of its earlier run
// that node 0 holds until it hears the hello, was lost (sent to node 0's
// epoch before a restart, or on the wire). The communicator sends again
// only the oldest batch while none is acknowledged, a held one, and node
// 1 sends its hellos again only to peers not down: node 0 never heard
// it, its URLs were never acknowledged and the crawl could not end. Node
// 0 asks a peer it holds URLs of, not yet heard in this run, for its
// hello in the hellos it sends again. Node 1 is a bare endpoint whose
// answer to node 0's hello at start is lost.
func TestClusterHelloLost(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	cfgs[0].Cluster.HelloEvery = 100 * time.Millisecond
	var logMu sync.Mutex
	var said []string
	cfgs[0].Logf = func(f string, a ...any) {
		logMu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		logMu.Unlock()
	}
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 64)
	ep, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				if h, err := cluster.DecodeHello(it.URL); it.Tag == cluster.TagHello && err == nil && h.Want {
					asked <- struct{}{}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
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
	select {
	case <-asked: // node 0's hello at start; the answer is lost
	case <-time.After(30 * time.Second):
		t.Fatal("no hello from node 0 at its start")
	}
	// On a host of the test web, whose robots.txt it serves: a host of
	// none had node 0 log its robots.txt unreachable, beside the point.
	seed, err := url.Parse(srv.SeedURLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	part := cfgs[0].Cluster.Config.Partitioner()
	for i := 0; ; i++ {
		if u := fmt.Sprintf("http://%s/held-%d", seed.Host, i); part.Owner(u) == 0 {
			if err := ep.Send(0, 1, []byte(u)); err != nil {
				t.Fatal(err)
			}
			ep.Flush()
			break
		}
	}
	waitFor(t, "node 1's URL received", 30*time.Second, func() bool { return n0.ClusterStats().ReceivedURLs == 1 })
	select {
	case <-asked:
		if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(cluster.Hello{Fields: cfgs[1].Cluster.Config.Canonical(), Epoch: ep.Epoch()}, nonce())); err != nil {
			t.Fatal(err)
		}
		ep.Flush()
	case <-time.After(5 * time.Second):
		t.Fatal("node 0 holds node 1's URL, not heard from, and does not ask for its hello")
	}
	waitFor(t, "node 1's URL acknowledged", 30*time.Second, func() bool { return ep.Backlog(0) == 0 })
	waitFor(t, "node 0's fetch of node 1's URL", 30*time.Second, func() bool {
		if n0.Status().Totals.Fetched > 0 {
			return true
		}
		logMu.Lock()
		defer logMu.Unlock()
		return len(said) > 0
	})
	logMu.Lock()
	defer logMu.Unlock()
	if len(said) > 0 {
		t.Errorf("node 0 logged what the test is not about: %q", said)
	}
}
