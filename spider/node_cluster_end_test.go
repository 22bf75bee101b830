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

// TestClusterEndsOnEvents: with the coordinator's fallback timer an hour
// long, the crawl still ends, on events alone (node_cluster_end.go): node
// 0 turning idle, a peer telling it it turned idle after answering busy
// (acknowledgements awaited first), the confirming round right after one
// that found every node idle.
func TestClusterEndsOnEvents(t *testing.T) {
	for _, by := range []cluster.Partition{cluster.ByURL, cluster.ByHost} {
		t.Run(by.String(), func(t *testing.T) {
			srv, lookup := startWeb(t, testweb.Config{Hosts: 30, Seed: 11, MaxPages: 20, MeanPageSize: 2000, Seeds: 3, Plain: true}, &bytes.Buffer{})
			const depth = 3
			cfgs := clusterNodes(t, 3, srv, lookup, depth, time.Second, by)
			for i := range cfgs {
				cfgs[i].Cluster.RoundEvery = time.Hour
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			start := time.Now()
			ran := runCluster(t, ctx, cfgs)
			if ctx.Err() != nil {
				t.Fatalf("the crawl did not end on events (%v)", time.Since(start))
			}
			if nb := ran[0].cs.NoBye; len(nb) > 0 {
				t.Errorf("node 0: peers that said bye named as silent: %v", nb)
			}
			union := map[string]bool{}
			for _, cfg := range cfgs {
				for u := range storedURLs(t, cfg.Dir) {
					union[u] = true
				}
			}
			compareSets(t, union, truthURLs(t, srv, depth))
		})
	}
}

// TestClusterPeerMissesTheEnd: node 1 answers the probe rounds idle and
// then never answers "finished". Node 0 stops waiting after byeWait and
// names node 1. One that never acknowledged "finished" (down or paused
// from then on) missed the end and, should it run on, waits for peers
// that are gone: the operator must stop it. One that acknowledged it
// recorded the end and was killed before its bye left (or the bye was
// lost): it was named as having missed the end too, and the operator
// looked for a node left waiting that had ended; now it is named as one
// that took the end, to check that it exited. Node 1 is a bare endpoint
// on its address, answering probes as told; one that takes the end is
// gone once node 0 has its acknowledgement, and node 0 sends hellos
// every 5 ms: one sent after "finished", never acknowledged, had node 0
// name node 1 as one that missed the end. Node 0 looked at the deadline
// only when its fallback timer ticked, up to 4 RoundEvery after it (an
// hour each here): it now looks at the deadline itself.
func TestClusterPeerMissesTheEnd(t *testing.T) {
	for _, c := range []struct {
		name string
		took bool // node 1 acknowledges "finished"
		want string
	}{
		{"missed", false, "node 1 did not answer the end of the crawl within 10s"},
		{"took", true, "node 1 took the end of the crawl (it acknowledged it) but sent no bye within 10s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			peerMissesTheEnd(t, c.took, c.want)
		})
	}
}

func peerMissesTheEnd(t *testing.T, took bool, want string) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var said []string
	cfgs[0].Logf = func(f string, a ...any) {
		logMu.Lock()
		said = append(said, fmt.Sprintf(f, a...))
		logMu.Unlock()
	}
	cfgs[0].Cluster.HelloEvery = 5 * time.Millisecond
	// Rounds follow events (node 0 turned idle, a round found all idle),
	// and the byes' deadline comes at its own time: node 0 looked at it
	// only at its fallback timer's tick, 4 RoundEvery (4 hours here, the
	// test's minute out).
	cfgs[0].Cluster.RoundEvery = time.Hour
	probes := make(chan [2]uint64, 64)
	stop := make(chan struct{})
	taken := make(chan struct{}, 1)
	ep, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				switch it.Tag {
				case cluster.TagFinished:
					if !took {
						<-stop // gone before it is acknowledged: nothing more taken
					}
					// Taken, recorded, and gone before the bye.
					taken <- struct{}{}
				case cluster.TagProbe:
					if r, e, err := cluster.DecodeProbe(it.URL); err == nil {
						probes <- [2]uint64{r, e}
					}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	defer close(stop)
	go func() {
		for {
			select {
			case r := <-probes:
				ep.Send(0, cluster.TagState, cluster.EncodeState(r[0], r[1], cluster.State{Idle: true, Epoch: ep.Epoch()}))
				ep.FlushTo(0)
			case <-stop:
				return
			}
		}
	}()
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	go func() {
		select {
		case <-taken:
		case <-stop:
			return
		}
		for n0.cl.ep.Backlog(1) > 0 {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		ep.Close() // killed once its acknowledgement is in: nothing after it is
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n0.Run(ctx); err != nil {
		t.Fatalf("node 0: %v", err)
	}
	if nb := n0.ClusterStats().NoBye; len(nb) != 1 || !strings.Contains(nb[0], want) {
		t.Errorf("node 0: NoBye %q; want %q", nb, want)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if l := strings.Join(said, "\n"); strings.Count(l, want) != 1 {
		t.Errorf("node 0 said %q %d times, want once:\n%s", want, strings.Count(l, want), l)
	}
}

// TestClusterCoordinatorBusyUnseen: node 0 kicked for a round (a peer's
// news that it turned idle) while it was itself busy for a moment (a
// batch of known URLs taken in the same pass) backs off and waits to
// turn done; the goroutine watching for that looks only when poked, and
// one that ran only after the moment saw it done before and after, so
// no round came until the fallback timer (an hour here: the crawl did
// not end on events under load). Node 1 is a bare endpoint answering the
// first probe busy, the others idle.
func TestClusterCoordinatorBusyUnseen(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 2, Seed: 4, MaxPages: 2, Seeds: 1, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 1, time.Second, cluster.ByURL)
	cfgs[0].Cluster.RoundEvery = time.Hour
	addrs, err := cfgs[0].Cluster.Config.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	probes := make(chan [2]uint64, 64)
	ep, err := communicator.New(communicator.Config{Self: 1, Conn: cfgs[1].Cluster.Comm.Conn,
		Peers: map[communicator.NodeID]netip.AddrPort{0: addrs[0], 1: addrs[1]},
		Keys:  []communicator.Key{{ID: 1, Secret: cfgs[1].Cluster.Secret}}, SendKey: 1, AckOnReturn: true,
		Handler: func(_ communicator.NodeID, _ uint64, items []communicator.Item) {
			for _, it := range items {
				if it.Tag == cluster.TagProbe {
					if r, e, err := cluster.DecodeProbe(it.URL); err == nil {
						probes <- [2]uint64{r, e}
					}
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case r := <-probes:
				ep.Send(0, cluster.TagState, cluster.EncodeState(r[0], r[1], cluster.State{Idle: r[0] > 1, Epoch: ep.Epoch()}))
				ep.FlushTo(0)
			case <-stop:
				return
			}
		}
	}()
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		n0.Run(ctx)
	}()
	defer func() {
		cancel()
		<-ran
	}()
	c := n0.cl
	backedOff := func(w time.Duration) func() bool {
		return func() bool {
			c.detMu.Lock()
			defer c.detMu.Unlock()
			return !c.det.Open() && c.det.Round() == 1 && c.roundWait == w
		}
	}
	waitFor(t, "round 1 found node 1 busy", 30*time.Second, backedOff(2*time.Hour))
	// Busy for a moment, unseen by the watcher (no poke): kicked then.
	n0.pending.Add(1)
	c.kickRound()
	waitFor(t, "node 0 backed off, busy itself", 30*time.Second, backedOff(4*time.Hour))
	n0.pending.Add(-1)
	n0.poke()
	waitFor(t, "a round once node 0 turned done again", 10*time.Second, func() bool { return n0.ClusterStats().TerminationRounds >= 2 })
}
