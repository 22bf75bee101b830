package spider

import (
	"context"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
)

// TestClusterProbeRoundsCountAnswers: node 1 answers node 0's first
// probe busy, then tells it unasked that it turned idle, and answers the
// next two rounds idle: the crawl ends after three rounds, and node 0's
// status page says 3 probe rounds with node 1. The unasked state was
// counted as a round too (4), so probe_rounds on /status and /metrics
// grew with every busy answer a peer later took back. Node 1 is a bare
// endpoint.
func TestClusterProbeRoundsCountAnswers(t *testing.T) {
	peer := newBarePeer(t, "")
	cfgs, send, next := peer.cfgs, peer.send, peer.next
	// Rounds follow events only: the news starts the second.
	cfgs[0].Cluster.RoundEvery = time.Hour
	defer func() { peer.ep.Close() }()
	peer.hello()
	n0, err := OpenNode(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		sum *NodeSummary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := n0.Run(ctx)
		done <- result{sum, err}
	}()
	state := func(p probeOf, idle bool) {
		send(cluster.TagState, cluster.EncodeState(p.round, p.epoch, cluster.State{Idle: idle, Epoch: peer.ep.Epoch()}))
	}
	first := next("the first round")
	state(first, false)
	waitFor(t, "node 0's first round complete", 30*time.Second, func() bool { return peer.ep.Backlog(0) == 0 })
	state(first, true) // news: idle now
	answered := 1
	for {
		select {
		case p := <-peer.probes:
			answered++
			state(p, true)
			continue
		case fin := <-peer.finished:
			r, e, err := cluster.DecodeFinished(fin)
			if err != nil {
				t.Fatal(err)
			}
			send(cluster.TagBye, cluster.EncodeBye(r, e))
		case <-ctx.Done():
			t.Fatalf("node 0 did not end after node 1's %d answers", answered)
		}
		break
	}
	if r := <-done; r.err != nil || !r.sum.Finished {
		t.Fatalf("node 0: %+v, %v", r.sum, r.err)
	}
	if ps := n0.Status().Peers; len(ps) != 1 || ps[0].ProbeRounds != uint64(answered) {
		t.Errorf("node 0's status page: peers %+v; want node 1 with probe_rounds %d (the rounds it answered)", ps, answered)
	}
}

// TestClusterProbeOnlyFromNodeZero: a probe that node 0 receives (from
// node 1, a bare endpoint: a build that is wrong, or a sender with the
// secret that should not have it) is a bad control message, counted;
// node 0 answered it as a peer answers node 0, counted it as a probe
// round with node 1 and took it for the last probe it had received.
func TestClusterProbeOnlyFromNodeZero(t *testing.T) {
	peer := newBarePeer(t, "")
	cfgs, send := peer.cfgs, peer.send
	cfgs[0].Cluster.RoundEvery = time.Hour
	defer func() { peer.ep.Close() }()
	peer.hello()
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
	defer func() { cancel(); <-ran }()
	first := peer.next("node 0's first round")
	send(cluster.TagProbe, cluster.EncodeProbe(first.round+5, peer.ep.Epoch()))
	deadline := time.Now().Add(20 * time.Second)
	for n0.ClusterStats().BadControl == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("node 1's probe to node 0 not counted as a bad control message: %+v", n0.ClusterStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if p := n0.cl.lastProbe.Load(); p != nil {
		t.Errorf("node 0 took node 1's probe for one it received: %+v", *p)
	}
}
