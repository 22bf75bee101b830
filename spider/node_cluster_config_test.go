package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
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
	// A URL's owner depends on the test web's ports: a web on which node
	// 0 owns a seed, to fetch while node 1 is down.
	var log bytes.Buffer
	var srv *testweb.Server
	var lookup LookupFunc
	part := cluster.Partitioner{By: cluster.ByURL, Nodes: 2}
	theirs := uint64(0) // seeds node 1 owns, which node 0 sends it first
	for try := 0; ; try++ {
		log.Reset()
		srv, lookup = startWeb(t, testweb.Config{Hosts: 8, Seed: 3, MaxPages: 8, Seeds: 2, Plain: true}, &log)
		theirs = 0
		for _, u := range srv.SeedURLs() {
			if part.Owner(u) == 1 {
				theirs++
			}
		}
		if theirs < uint64(len(srv.SeedURLs())) {
			break
		}
		if try == 20 {
			t.Fatal("node 0 owns no seed of 20 webs")
		}
		srv.Close()
	}
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
		return n0.n.Counters().Pages > 0 && n0.n.ClusterStats().SentURLs > theirs
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

// TestClusterClockStepsLater: node 1's clock is right at the start and is
// set an hour ahead while the crawl runs (no ntp_servers, a date set by
// hand). Node 0 sees it in node 1's next hello, not only at a restart:
// it names the skew once and fetches nothing; once the clocks agree again
// (node 0's set likewise: a clock set back would leave node 1's hosts
// waiting an hour for their delays) it fetches again and the crawl
// completes.
func TestClusterClockStepsLater(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 8, Seed: 4, MaxPages: 8, Seeds: 4, Plain: true}, &log)
	cfgs := clusterNodes(t, 2, srv, lookup, 2, time.Second, cluster.ByURL)
	var ahead [2]atomic.Int64 // each node's clock's error
	for i := range cfgs {
		cfgs[i].Scheduler.Clock = cluster.SystemClock(cfgs[i].Cluster.Config.Schedule(), i, 100*time.Millisecond,
			func() time.Time { return time.Now().Add(time.Duration(ahead[i].Load())) })
	}
	var logMu sync.Mutex
	var said []string
	for i := range cfgs {
		cfgs[i].Cluster.HelloEvery = 50 * time.Millisecond
		logf := cfgs[i].Logf
		cfgs[i].Logf = func(f string, a ...any) {
			logMu.Lock()
			said = append(said, fmt.Sprintf("node %d: ", i)+fmt.Sprintf(f, a...))
			logMu.Unlock()
			logf(f, a...)
		}
	}
	saying := func(what string) (n int) {
		logMu.Lock()
		defer logMu.Unlock()
		for _, l := range said {
			if strings.Contains(l, what) {
				n++
			}
		}
		return n
	}
	var nodes []*Node
	for _, cfg := range cfgs {
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 2)
	for _, n := range nodes {
		go func() {
			_, err := n.Run(ctx)
			done <- err
		}()
	}
	// Node 1's hellos of its start (and its answer to node 0's) went
	// before its URLs: once node 0 has some, its clock was compared.
	waitFor(t, "URLs from node 1", time.Minute, func() bool { return nodes[0].ClusterStats().ReceivedURLs > 0 })
	if cs := nodes[0].ClusterStats(); cs.Refusing {
		t.Fatalf("node 0 refusing before node 1's clock moved: %v", cs.Mismatch)
	}
	ahead[1].Store(int64(time.Hour))
	waitFor(t, "node 0 to see node 1's clock ahead", time.Minute, func() bool { return nodes[0].ClusterStats().Refusing })
	if m := strings.Join(nodes[0].ClusterStats().Mismatch, " "); !strings.Contains(m, "ahead of ours") {
		t.Errorf("node 0: mismatch %v; want node 1's clock named", m)
	}
	time.Sleep(200 * time.Millisecond) // hellos keep coming: said once
	if n := saying("node 0: cluster: node 1: its phase clock is at least"); n != 1 {
		t.Errorf("node 0 named node 1's clock %d times, want once", n)
	}
	ahead[0].Store(int64(time.Hour)) // node 0's set the same way: they agree again
	for range nodes {
		if err := <-done; err != nil {
			t.Errorf("run after the clock was set right: %v", err)
		}
	}
	if n := saying("node 0: cluster: node 1's phase clock is within the guard of ours again"); n != 1 {
		t.Errorf("node 0 said node 1's clock was right again %d times, want once", n)
	}
	if n := saying("node 0: cluster: node 1: its phase clock is at least"); n != 1 {
		t.Errorf("node 0 named node 1's clock %d times in all, want once", n)
	}
}

// TestClusterLostDir: node 1's hellos say whether its data directory is
// new. Node 0 reports node 1's share lost when, having heard from node 1
// before, it hears a hello of a new directory under a new epoch; a hello
// written before node 1's restart and sent again after it (from its spill
// file) is stale and ignored. Node 1 is a bare endpoint on its address,
// so the test says what each hello holds.
func TestClusterLostDir(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &log)
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n0.Close() }() // (reopened below)
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
	conn := cfgs[1].Cluster.Comm.Conn
	var ep *communicator.Endpoint
	// restart starts node 1 again: a new endpoint, a new epoch.
	restart := func() {
		t.Helper()
		var last uint64
		if ep != nil {
			last = ep.Epoch()
			ep.Close()
			if conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(addrs[1])); err != nil {
				t.Fatal(err)
			}
			// An epoch is the start's millisecond and random bits (a
			// node's state file makes them grow; this endpoint has none).
			time.Sleep(2 * time.Millisecond)
		}
		ep, err = communicator.New(communicator.Config{Self: 1, Conn: conn,
			Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
			Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1,
			Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Epoch() <= last {
			t.Fatalf("restarted endpoint's epoch %d not after %d", ep.Epoch(), last)
		}
	}
	defer func() { ep.Close() }()
	// hello sends one with block and waits until node 0's writer took it.
	var block []cluster.Field
	hello := func(fresh bool, epoch uint64) {
		t.Helper()
		h := cluster.Hello{Fields: block, Epoch: epoch, Fresh: fresh}
		if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(h, nonce())); err != nil {
			t.Fatal(err)
		}
		ep.Flush()
		waitFor(t, "the hello acknowledged", time.Minute, func() bool { return ep.Backlog(0) == 0 })
	}
	lost := func() []string { return n0.ClusterStats().LostDirs }

	// Its first run had another number of phases (the block differs).
	other := cfgs[1].Cluster.Config
	other.Phases++
	block = other.Canonical()
	restart()
	first := ep.Epoch()
	hello(true, first) // a new cluster: nothing was lost
	if !n0.ClusterStats().Refusing {
		t.Fatal("node 0 took node 1's differing block")
	}
	// Restarted right, on its own directory; the first run's hello goes
	// again after the new one.
	block = cfgs[1].Cluster.Config.Canonical()
	restart()
	hello(false, ep.Epoch())
	block = other.Canonical()
	hello(true, first)
	if l := lost(); len(l) != 0 {
		t.Errorf("node 1 restarted on its own directory reported lost: %v", l)
	}
	if ps := n0.Status().Peers; len(ps) != 1 || ps[0].LostDir {
		t.Errorf("node 0's peers on the status page: %+v; want node 1 not lost", ps)
	}
	if cs := n0.ClusterStats(); cs.Refusing {
		t.Errorf("node 1's stale hello taken: mismatch %v", cs.Mismatch)
	}
	block = cfgs[1].Cluster.Config.Canonical()
	restart()
	hello(true, ep.Epoch()) // its disk was lost
	if l := lost(); len(l) != 1 || !strings.Contains(l[0], "node 1 came back with a new data directory") {
		t.Errorf("node 1 restarted on a new directory: lost %v; want node 1 named", l)
	}
	// Every peer's status page shows it (issue 16), not only its stderr.
	if ps := n0.Status().Peers; len(ps) != 1 || ps[0].Node != 1 || !ps[0].LostDir {
		t.Errorf("node 0's peers on the status page: %+v; want node 1's lost_dir", ps)
	}
	// Node 0 restarted still knows (DIR/CLUSTER): its run ends 3, not 0.
	cancel()
	<-ran
	was := lost()
	n0 = reopenNode(t, cfgs, 0, n0)
	if l := lost(); len(l) != 1 || l[0] != was[0] {
		t.Errorf("node 0 restarted: lost %q; want %q", l, was)
	}
}

// TestClusterHelloBehindBacklog: node 1 had more than a window (512) of
// URL batches queued for node 0 (down a while, say) when node 0 started,
// and its hello comes after them: node 0 does not wait for the hello to
// acknowledge them all, or neither side would ever move. Should the hello
// then say node 1's block gives URLs other owners (another partition),
// those URLs were taken under the wrong block: node 0 says so, with how
// many, rather than lose them without a word.
func TestClusterHelloBehindBacklog(t *testing.T) {
	for _, differs := range []bool{false, true} {
		t.Run(fmt.Sprintf("differs=%v", differs), func(t *testing.T) { helloBehindBacklog(t, differs) })
	}
}

func helloBehindBacklog(t *testing.T, differs bool) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &log)
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
	for i := 0; sent < 520; i++ {
		// Hosts that do not resolve: node 0 admits them and fails them.
		if u := fmt.Sprintf("http://backlog-%d.example/", i); part.Owner(u) == 0 {
			if err := ep.Send(0, 1, []byte(u)); err != nil {
				t.Fatal(err)
			}
			ep.Flush() // a batch each, once node 0's epoch is known
			if sent++; sent == 1 {
				waitFor(t, "the first batch", time.Minute, func() bool { return n0.ClusterStats().ReceivedURLs == 1 })
			}
		}
	}
	if st := ep.Stats().Peers[0]; st.Unacked+st.Queued == 0 {
		t.Fatalf("nothing waits at node 1: %+v", st)
	}
	block := cfgs[1].Cluster.Config
	if differs {
		block.Partition = cluster.ByHost
	}
	h := cluster.Hello{Fields: block.Canonical(), Epoch: ep.Epoch()}
	if err := ep.Send(0, cluster.TagHello, cluster.EncodeHello(h, nonce())); err != nil {
		t.Fatal(err)
	}
	ep.Flush()
	if !differs {
		waitFor(t, "node 1's URLs and hello acknowledged", time.Minute, func() bool { return ep.Backlog(0) == 0 })
	} else {
		// URLs sorted into the hello's batch, and any after it, are held.
		waitFor(t, "node 1's URLs and hello received", time.Minute, func() bool {
			cs := n0.ClusterStats()
			return cs.ReceivedURLs == uint64(sent) && cs.Refusing
		})
	}
	cs := n0.ClusterStats()
	if cs.ReceivedURLs != uint64(sent) {
		t.Errorf("node 0 received %d URLs, want %d", cs.ReceivedURLs, sent)
	}
	if !differs {
		if len(cs.LostURLs) != 0 {
			t.Errorf("node 0, node 1's block the same: LostURLs %q", cs.LostURLs)
		}
		return
	}
	const want = "node 1's cluster block gives URLs other owners than ours, and "
	var taken int
	if len(cs.LostURLs) == 1 {
		fmt.Sscanf(strings.TrimPrefix(cs.LostURLs[0], want), "%d", &taken)
	}
	if len(cs.LostURLs) != 1 || !strings.HasPrefix(cs.LostURLs[0], want) || taken <= unheardHoldMax || taken > sent {
		t.Errorf("node 0: LostURLs %q; want %q and the URLs taken (%d, of %d sent)", cs.LostURLs, want, taken, sent)
	}
	// Node 0 restarted still knows (DIR/CLUSTER): its run ends 3, not 0.
	cancel()
	<-ran
	n0 = reopenNode(t, cfgs, 0, n0)
	if l := n0.ClusterStats().LostURLs; len(l) != 1 || l[0] != cs.LostURLs[0] {
		t.Errorf("node 0 restarted: LostURLs %q; want %q", l, cs.LostURLs)
	}
}
