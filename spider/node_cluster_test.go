package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/scheduler/ntptest"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// clusterNodes builds the configs of an n-node cluster on loopback with
// phases of length slot, each node's UDP socket bound already.
func clusterNodes(t *testing.T, n int, srv *testweb.Server, lookup LookupFunc, depth int, slot time.Duration, by cluster.Partition) []NodeConfig {
	t.Helper()
	return clusterOf(t, n, slot, by, func(dir string) NodeConfig { return nodeConfig(t, dir, srv, lookup, depth) })
}

// clusterOf is clusterNodes with each node's config from base(its data
// directory).
func clusterOf(t *testing.T, n int, slot time.Duration, by cluster.Partition, base func(dir string) NodeConfig) []NodeConfig {
	t.Helper()
	var conns []*net.UDPConn
	var members []cluster.Member
	for i := range n {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		members = append(members, cluster.Member{ID: i, UDP: c.LocalAddr().String()})
	}
	epoch := time.Now().Truncate(time.Second)
	var cfgs []NodeConfig
	for i := range n {
		cc := cluster.Config{Self: i, Members: members, Phases: n, PhaseLength: slot, Epoch: epoch, Partition: by}
		if err := cc.Check(); err != nil {
			t.Fatal(err)
		}
		cfg := base(t.TempDir())
		cfg.Scheduler.Phases = n
		cfg.Scheduler.Clock = cluster.SystemClock(cc.Schedule(), i, slot/10, nil)
		id := i
		cfg.Logf = func(f string, a ...any) { t.Logf("node %d: %s", id, fmt.Sprintf(f, a...)) }
		cfg.Cluster = &NodeCluster{Config: cc, Secret: []byte("0123456789abcdef0123456789abcdef"),
			Comm: communicator.Config{Conn: conns[i]}, RoundEvery: 50 * time.Millisecond}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// runCluster runs every node to its end and returns the summaries.
type ranNode struct {
	sum *NodeSummary
	cs  ClusterStats
}

func runCluster(t *testing.T, ctx context.Context, cfgs []NodeConfig) []ranNode {
	t.Helper()
	nodes := make([]*Node, len(cfgs))
	for i, cfg := range cfgs {
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	sums := make([]*NodeSummary, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { sums[i], errs[i] = n.Run(ctx) })
	}
	wg.Wait()
	ran := make([]ranNode, len(nodes))
	for i, n := range nodes {
		cs := n.ClusterStats()
		ran[i] = ranNode{sums[i], cs}
		t.Logf("node %d: %+v; sent %d received %d misrouted %d rounds %d datagrams %d drops %v comm items sent %d recv %d hits %d refused %d", i, *sums[i],
			cs.SentURLs, cs.ReceivedURLs, cs.Misrouted, cs.TerminationRounds, cs.Comm.SentDatagrams, nonzero(cs.Comm.Drops), cs.Comm.SentItems, cs.Comm.RecvItems, cs.Comm.CacheHits, cs.Comm.Refused)
		if cs.Misrouted > 0 || cs.BadControl > 0 || len(cs.Mismatch) > 0 {
			t.Errorf("node %d: misrouted %d, bad control %d, mismatch %v", i, cs.Misrouted, cs.BadControl, cs.Mismatch)
		}
		// The status page's peers: the end took two probe rounds at
		// least, between node 0 and each other node.
		st := n.Status()
		checkFields(t, st)
		for _, p := range st.Peers {
			if (i == 0 || p.Node == 0) && p.ProbeRounds < 2 || len(p.ConfigMismatch) > 0 || p.DroppedForged > 0 {
				t.Errorf("node %d's status of peer %d: %+v", i, p.Node, p)
			}
		}
		if err := n.Close(); err != nil {
			t.Errorf("node %d close: %v", i, err)
		}
		if errs[i] != nil {
			t.Errorf("node %d: %v", i, errs[i])
		} else if !sums[i].Finished {
			t.Errorf("node %d did not finish", i)
		}
	}
	return ran
}

func nonzero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// TestClusterInProcess: three nodes in one process crawl a test web; the
// union of their stores is the truth, no URL stored twice, each page on
// its owner, and the web saw one connection per host at a time.
func TestClusterInProcess(t *testing.T) {
	for _, by := range []cluster.Partition{cluster.ByURL, cluster.ByHost} {
		t.Run(by.String(), func(t *testing.T) {
			var log bytes.Buffer
			srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 7, MaxPages: 30, MeanPageSize: 3000, Seeds: 3, Plain: true}, &log)
			const depth = 3
			cfgs := clusterNodes(t, 3, srv, lookup, depth, 2*time.Second, by)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			runCluster(t, ctx, cfgs)
			union := map[string]bool{}
			part := cfgs[0].Cluster.Config.Partitioner()
			for i, cfg := range cfgs {
				for u := range storedURLs(t, cfg.Dir) {
					if union[u] {
						t.Errorf("%s stored by two nodes", u)
					}
					if o := part.Owner(u); o != i {
						t.Errorf("%s stored by node %d, owned by %d", u, i, o)
					}
					union[u] = true
				}
			}
			compareSets(t, union, truthURLs(t, srv, depth))

			checkClusterPolite(t, srv, &log, len(cfgs))
		})
	}
}

// checkClusterPolite audits the web after a cluster crawl: nothing
// forbidden, never two requests at once on a host.
// Each node fetches robots.txt of a host it has URLs of (with url
// partitioning, up to N fetches); other URLs fetched twice (a list cut at
// the slot's guard while a response was coming) are logged.
func checkClusterPolite(t *testing.T, srv *testweb.Server, log *bytes.Buffer, nodes int) *testweb.Report {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := testweb.Audit(bytes.NewReader(log.Bytes()), testweb.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var dups []testweb.URLCount
	for _, d := range rep.Duplicates {
		if strings.HasSuffix(d.URL, "/robots.txt") && d.Count <= nodes {
			continue
		}
		dups = append(dups, d)
	}
	if len(dups) > 0 {
		t.Logf("fetched more than once (cut at a slot's end): %v", head(urlCounts(dups), 10))
	}
	if rep.Forbidden > 0 || rep.MaxInFlightPerHost > 1 {
		t.Errorf("impolite: %d forbidden %v, max %d in flight",
			rep.Forbidden, head(rep.ForbiddenURLs, 5), rep.MaxInFlightPerHost)
	}
	if rep.MaxConnsPerHost > 1 {
		// In one process the nodes share one client address, so the log
		// cannot tell a connection of another node from one of the same
		// node whose close the loaded server saw late; TestClusterCrawl
		// (a namespace per node) checks connections across nodes.
		t.Logf("max %d connections per host (%s)", rep.MaxConnsPerHost, rep.MaxConnsHost)
	}
	return rep
}

// TestClusterLoss: 10 % of the datagrams lost, 10 % duplicated and 10 %
// reordered (the communicator's test hook, for machines without tc
// netem): the crawl is the same.
func TestClusterLoss(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 9, MaxPages: 30, MeanPageSize: 3000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	cfgs := clusterNodes(t, 3, srv, lookup, depth, time.Second, cluster.ByURL)
	for i := range cfgs {
		cfgs[i].Cluster.Comm.Hook = communicator.Faults(0.1, 0.1, 0.1, uint64(i+1))
		cfgs[i].Cluster.Comm.RetransmitMin = 50 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes := runCluster(t, ctx, cfgs)
	retrans := uint64(0)
	for _, n := range nodes {
		retrans += n.cs.Comm.Retransmits
	}
	if retrans == 0 {
		t.Error("no retransmission with 10 % loss")
	}
	union := map[string]bool{}
	for _, cfg := range cfgs {
		for u := range storedURLs(t, cfg.Dir) {
			if union[u] {
				t.Errorf("%s stored by two nodes", u)
			}
			union[u] = true
		}
	}
	compareSets(t, union, truthURLs(t, srv, depth))
}

// TestClusterConfigMismatch: two nodes whose cluster blocks differ say
// which key differs and fetch nothing.
func TestClusterConfigMismatch(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 9, MaxPages: 10, Seeds: 2, Plain: true}, &log)
	cfgs := clusterNodes(t, 2, srv, lookup, 2, time.Second, cluster.ByURL)
	cfgs[1].Cluster.Config.Partition = cluster.ByHost
	nodes := make([]*Node, 2)
	for i, cfg := range cfgs {
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes[i] = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Each has the other's hello before it runs (so the test does not
	// depend on whether a list starts before the hello arrives).
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, n := range nodes {
		for {
			n.cl.mu.Lock()
			got := len(n.cl.inbox) > 0
			n.cl.mu.Unlock()
			if got {
				break
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatal("no hello arrived")
			}
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 2)
	for _, n := range nodes {
		go func() {
			_, err := n.Run(runCtx)
			done <- err
		}()
	}
	for !(len(nodes[0].ClusterStats().Mismatch) > 0 && len(nodes[1].ClusterStats().Mismatch) > 0) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the nodes never noticed that their configs differ")
		}
	}
	stop()
	for range nodes {
		if err := <-done; !errors.Is(err, ErrInterrupted) {
			t.Errorf("run: %v, want interrupted", err)
		}
	}
	for i, n := range nodes {
		cs := n.ClusterStats()
		if !cs.Refusing || !strings.Contains(strings.Join(cs.Mismatch, " "), "cluster.partition") {
			t.Errorf("node %d: refusing %v, mismatch %v; want cluster.partition named", i, cs.Refusing, cs.Mismatch)
		}
		if p := n.Counters().Pages; p != 0 {
			t.Errorf("node %d fetched %d pages with a differing config", i, p)
		}
		st := n.Status()
		checkFields(t, st)
		if len(st.Peers) != 1 || !strings.Contains(strings.Join(st.Peers[0].ConfigMismatch, " "), "cluster.partition") {
			t.Errorf("node %d: peers on the status page %+v; want cluster.partition in config_mismatch", i, st.Peers)
		}
	}
}

// TestClusterUnsafeClock: a node whose NTP server lies beyond the bound
// fetches nothing and says why; once the server tells the truth it crawls
// to the end.
func TestClusterUnsafeClock(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 5, MaxPages: 10, Seeds: 2, Plain: true}, &log)
	const depth = 2
	liar := ntptest.NewServer(t, 1500*time.Millisecond)
	clock, err := scheduler.NewClock(scheduler.ClockConfig{NTP: scheduler.NTPConfig{Servers: []string{liar.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := clock.Measure(ctx); err != nil {
		t.Fatal(err)
	}
	cfgs := clusterNodes(t, 1, srv, lookup, depth, time.Second, cluster.ByURL)
	cfg := cfgs[0]
	cfg.Scheduler.Clock = scheduler.NodeClock(clock, cfg.Cluster.Config.Schedule(), 0)
	cfg.ClockStatus = clock.Status
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := n.Run(ctx)
		done <- err
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n.ClusterStats().ClockUnsafe == "" {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the node never said its clock is unsafe")
		}
	}
	cs := n.ClusterStats()
	if !strings.Contains(cs.ClockUnsafe, "exceeds the bound") || !cs.Refusing || n.Counters().Phase != -1 {
		t.Errorf("unsafe clock: %+v, phase %d", cs, n.Counters().Phase)
	}
	if p := n.Counters().Pages; p != 0 {
		t.Errorf("%d pages fetched on an unsafe clock", p)
	}
	liar.SetOffset(0)
	if _, err := clock.Measure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	compareSets(t, storedURLs(t, cfg.Dir), truthURLs(t, srv, depth))
}

// TestClusterForged: datagrams from outside the cluster (garbage from a
// stranger, a node's address with the wrong secret) are dropped and none
// of their URLs is admitted.
func TestClusterForged(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 4, Seed: 5, MaxPages: 4, Seeds: 1, Plain: true}, &log)
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Seeds = nil
	n, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := n.Run(runCtx)
		done <- err
	}()
	addrs, _ := cfgs[0].Cluster.Config.Addrs()
	// An impostor on node 1's own address with a wrong secret.
	imp, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers:   map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:    []communicator.Key{{ID: 1, Secret: []byte("not-the-secret-0123456789abcdef")}},
		SendKey: 1, Handler: func(communicator.NodeID, uint64, []communicator.Item) {}, AckOnReturn: true})
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	var forged []string
	for i := range 50 {
		u := fmt.Sprintf("http://forged.example/%d", i)
		if cfgs[0].Cluster.Config.Partitioner().Owner(u) == 0 {
			forged = append(forged, u)
			imp.Send(0, 1, []byte(u))
		}
	}
	imp.Flush()
	stranger, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	for i := range 20 {
		b := bytes.Repeat([]byte{byte(i), 0x01, 0x01}, 20+i)
		stranger.WriteToUDPAddrPort(b, addrs[0])
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		d := n.ClusterStats().Comm.Drops
		if d["bad_mac"] > 0 && d["wrong_address"]+d["malformed"]+d["unknown_key"]+d["unknown_node"] >= 20 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("forged datagrams not all seen: %v", nonzero(d))
		}
	}
	stop()
	<-done
	cs := n.ClusterStats()
	t.Logf("drops %v", nonzero(cs.Comm.Drops))
	if cs.ReceivedURLs != 0 {
		t.Errorf("%d URLs received from forged datagrams", cs.ReceivedURLs)
	}
	for _, u := range forged {
		if _, ok := n.tree.FindString(u); ok {
			t.Errorf("forged URL %s admitted", u)
		}
	}
	// The status page shows the impostor's datagrams against node 1.
	st := n.Status()
	checkFields(t, st)
	if len(st.Peers) != 1 || st.Peers[0].Node != 1 || st.Peers[0].DroppedForged < cs.Comm.Drops["bad_mac"] {
		t.Errorf("peers on the status page: %+v; want node 1 with dropped_forged >= %d", st.Peers, cs.Comm.Drops["bad_mac"])
	}
}

// TestPhaseKeyOfHostKey: a cluster's phase key (hostName) is the host
// name of a scheduler host key, whatever its scheme and port.
func TestPhaseKeyOfHostKey(t *testing.T) {
	for name, want := range map[string]string{
		"a.example":            "a.example",
		"a.example:8080":       "a.example",
		"https:a.example":      "a.example",
		"https:a.example:8443": "a.example",
		"https:[::1]:8443":     "[::1]",
		"[::1]:80":             "[::1]",
		"[::1":                 "[::1",
	} {
		if got := hostName(name); got != want {
			t.Errorf("hostName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestClusterRedirectChainBounded: with URLs partitioned over nodes, the
// hops of a redirect chain /r/N -> /r/N+1 mostly belong to other nodes.
// The count of redirects in a row must go with the target to its owner,
// or each node starts it again and the chain is crawled without end.
func TestClusterRedirectChainBounded(t *testing.T) {
	web := startHostile(t, func(w http.ResponseWriter, r *http.Request, web *hostileWeb) {
		var k int
		fmt.Sscanf(r.URL.Path[min(3, len(r.URL.Path)):], "%d", &k)
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			htmlLinks(w, "/r/0")
		default:
			http.Redirect(w, r, fmt.Sprintf("/r/%d", k+1), http.StatusFound)
		}
	})
	seeds := []string{web.url("main.test", "/")}
	cfgs := clusterOf(t, 3, 300*time.Millisecond, cluster.ByURL, func(dir string) NodeConfig { return hostileConfig(t, dir, seeds, 1) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCluster(t, ctx, cfgs)
	union := map[string]bool{}
	for _, cfg := range cfgs {
		for u := range storedURLs(t, cfg.Dir) {
			union[u] = true
		}
	}
	for k := 0; k <= maxRedirectHops; k++ {
		if u := web.url("main.test", fmt.Sprintf("/r/%d", k)); !union[u] {
			t.Errorf("%s not stored", u)
		}
	}
	if u := web.url("main.test", fmt.Sprintf("/r/%d", maxRedirectHops+1)); union[u] {
		t.Errorf("%s stored: %d redirects in a row followed across the nodes (%d pages stored)", u, maxRedirectHops+1, len(union))
	}
}

// TestClusterLimitsAreTheCluster: limits.max_pages and, with URLs
// partitioned by URL, max_pages_per_host bound the cluster's crawl, not
// each node's: three nodes each taking the whole limit stored three times
// the pages asked for.
func TestClusterLimitsAreTheCluster(t *testing.T) {
	if got := NodeShare(10, 3); got != 4 {
		t.Errorf("NodeShare(10, 3) = %d, want 4", got)
	}
	for _, c := range []struct {
		name              string
		maxPages, perHost int
	}{{"max_pages", 30, 0}, {"max_pages_per_host", 0, 5}} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 3, MaxPages: 40, MeanPageSize: 2000, Seeds: 3, Plain: true}, &log)
			cfgs := clusterNodes(t, 3, srv, lookup, 4, time.Second, cluster.ByURL)
			for i := range cfgs {
				cfgs[i].MaxPages = int64(c.maxPages)
				cfgs[i].Scope.MaxPagesPerHost = c.perHost
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			runCluster(t, ctx, cfgs)
			hosts := map[string]int{}
			total := 0
			for _, cfg := range cfgs {
				for u := range storedURLs(t, cfg.Dir) {
					total++
					hosts[hostKey(u)]++ // the budget's host: the scheduler's
				}
			}
			if total == 0 || c.maxPages > 0 && total > c.maxPages {
				t.Errorf("the cluster stored %d pages at max_pages %d", total, c.maxPages)
			}
			for h, n := range hosts {
				// Each node admits ceil(5/3) = 2 of a host's URLs: at most 6.
				if c.perHost > 0 && n > 6 {
					t.Errorf("host %s: %d pages stored at max_pages_per_host %d", h, n, c.perHost)
				}
			}
			t.Logf("%d pages stored, per host %v", total, hosts)
		})
	}
}
