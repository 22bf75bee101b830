package spider

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// rebind gives cfgs' nodes new UDP sockets on their addresses (a closed
// node's endpoint closed its own).
func rebind(t *testing.T, cfgs []NodeConfig) {
	t.Helper()
	for i := range cfgs {
		a, err := net.ResolveUDPAddr("udp", cfgs[i].Cluster.Config.Members[i].UDP)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.ListenUDP("udp", a)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[i].Cluster.Comm.Conn = c
	}
}

// TestClusterMismatchLosesNothing: node 0 crawls while node 1 is down, so
// the links it found for node 1 wait in its spill file; node 1 then starts
// with another partition. It must not acknowledge them: the operator
// restarts it with the right block on a new directory (its IDENTITY
// refuses the old one), and the crawl is whole.
func TestClusterMismatchLosesNothing(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 8, Seed: 3, MaxPages: 8, Seeds: 2, Plain: true}, &log)
	const depth = 2
	cfgs := clusterNodes(t, 2, srv, lookup, depth, time.Second, cluster.ByURL)
	cfgs[1].Seeds = nil // node 1 learns its URLs from node 0 only
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type running struct {
		n    *Node
		stop context.CancelFunc
		done chan error
	}
	start := func(cfg NodeConfig) running {
		t.Helper()
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		r := running{n, stop, make(chan error, 1)}
		go func() {
			_, err := n.Run(runCtx)
			r.done <- err
		}()
		return r
	}
	halt := func(r running) {
		t.Helper()
		r.stop()
		if err := <-r.done; err != nil && !errors.Is(err, ErrInterrupted) {
			t.Errorf("run: %v", err)
		}
		if err := r.n.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Node 0 alone: its share fetched, links for node 1 spilled.
	n0 := start(cfgs[0])
	waitFor(t, "node 0 to find links for node 1", time.Minute, func() bool {
		c := n0.n.Counters()
		return c.Pages > 0 && n0.n.ClusterStats().SentURLs > 2 // the seeds and a link
	})
	// Node 1 with another partition, on a directory of its own.
	wrong := cfgs[1]
	wrong.Dir = t.TempDir()
	wrong.Cluster = new(NodeCluster)
	*wrong.Cluster = *cfgs[1].Cluster
	wrong.Cluster.Config.Partition = cluster.ByHost
	n1 := start(wrong)
	waitFor(t, "both to see the configs differ and node 1 to get node 0's URLs", time.Minute, func() bool {
		return len(n0.n.ClusterStats().Mismatch) > 0 && len(n1.n.ClusterStats().Mismatch) > 0 &&
			n1.n.ClusterStats().ReceivedURLs > 0
	})
	// Several of the writer's syncs, after which it would have
	// acknowledged what it took.
	time.Sleep(5 * clusterSyncInterval)
	halt(n1)
	halt(n0)

	// Fixed: node 1 on a new directory, node 0 on its own.
	rebind(t, cfgs)
	runCluster(t, ctx, cfgs)
	union := map[string]bool{}
	for _, cfg := range cfgs {
		for u := range storedURLs(t, cfg.Dir) {
			union[u] = true
		}
	}
	compareSets(t, union, truthURLs(t, srv, depth))
}

// TestClusterClockAhead: without NTP, node 1's clock is an hour ahead, so
// it works on a phase node 0 works on an hour later (with url
// partitioning, both fetch from the same hosts at once). Node 0 sees its
// hellos come from the future: it names the skew on its log and status
// page and fetches nothing.
func TestClusterClockAhead(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 6, Seed: 4, MaxPages: 6, Seeds: 2, Plain: true}, &log)
	cfgs := clusterNodes(t, 2, srv, lookup, 2, time.Second, cluster.ByURL)
	cfgs[1].Scheduler.Clock = cluster.SystemClock(cfgs[1].Cluster.Config.Schedule(), 1, 100*time.Millisecond,
		func() time.Time { return time.Now().Add(time.Hour) })
	var nodes []*Node
	for _, cfg := range cfgs {
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Node 0 has node 1's hello before it runs, so that no list starts
	// before it is read.
	waitFor(t, "node 1's hello", time.Minute, func() bool {
		nodes[0].cl.mu.Lock()
		defer nodes[0].cl.mu.Unlock()
		return len(nodes[0].cl.inbox) > 0
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for _, n := range nodes {
		go func() {
			_, err := n.Run(runCtx)
			done <- err
		}()
	}
	waitFor(t, "node 0 to see node 1's clock ahead", time.Minute, func() bool { return nodes[0].ClusterStats().Refusing })
	stop()
	for range nodes {
		if err := <-done; !errors.Is(err, ErrInterrupted) {
			t.Errorf("run: %v, want interrupted", err)
		}
	}
	cs := nodes[0].ClusterStats()
	if m := strings.Join(cs.Mismatch, " "); !strings.Contains(m, "clock: its phase clock is at least ") || !strings.Contains(m, " ahead of ours") {
		t.Errorf("node 0: mismatch %v; want node 1's clock named", cs.Mismatch)
	}
	if p := nodes[0].Counters().Pages; p != 0 {
		t.Errorf("node 0 fetched %d pages in slots node 1's clock gives it too", p)
	}
	st := nodes[0].Status()
	if len(st.Peers) != 1 || !strings.Contains(strings.Join(st.Peers[0].ConfigMismatch, " "), "ahead of ours") {
		t.Errorf("node 0's peers on the status page: %+v; want the clock in config_mismatch", st.Peers)
	}
}
