package spider

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/communicator"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// clusterNodes builds the configs of an n-node cluster on loopback with
// phases of length slot, each node's UDP socket bound already.
func clusterNodes(t *testing.T, n int, srv *testweb.Server, lookup LookupFunc, depth int, slot time.Duration, by cluster.Partition) []NodeConfig {
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
		cfg := nodeConfig(t, t.TempDir(), srv, lookup, depth)
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
func runCluster(t *testing.T, ctx context.Context, cfgs []NodeConfig) []*NodeSummary {
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
	for i, n := range nodes {
		cs := n.ClusterStats()
		t.Logf("node %d: %+v; sent %d received %d misrouted %d rounds %d datagrams %d drops %v comm items sent %d recv %d hits %d refused %d", i, *sums[i],
			cs.SentURLs, cs.ReceivedURLs, cs.Misrouted, cs.TerminationRounds, cs.Comm.SentDatagrams, nonzero(cs.Comm.Drops), cs.Comm.SentItems, cs.Comm.RecvItems, cs.Comm.CacheHits, cs.Comm.Refused)
		if cs.Misrouted > 0 || cs.BadControl > 0 || len(cs.Mismatch) > 0 {
			t.Errorf("node %d: misrouted %d, bad control %d, mismatch %v", i, cs.Misrouted, cs.BadControl, cs.Mismatch)
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
	return sums
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
			cfgs := clusterNodes(t, 3, srv, lookup, depth, time.Second, by)
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
// forbidden, never two connections or two requests at once on a host.
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
	if rep.Forbidden > 0 || rep.MaxConnsPerHost > 1 || rep.MaxInFlightPerHost > 1 {
		t.Errorf("impolite: %d forbidden %v, max %d connections per host (%s), max %d in flight",
			rep.Forbidden, head(rep.ForbiddenURLs, 5), rep.MaxConnsPerHost, rep.MaxConnsHost, rep.MaxInFlightPerHost)
	}
	return rep
}
