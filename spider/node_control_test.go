package spider

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// waitFor polls cond every millisecond until it holds or limit passes.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		<-tick.C
	}
}

// running is a node's Run in the background: done is closed when it returns.
type running struct {
	done chan struct{}
	sum  *NodeSummary
	err  error
}

func goRun(ctx context.Context, n *Node) *running {
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.sum, r.err = n.Run(ctx)
	}()
	return r
}

// controlConfig is nodeConfig with room for a loaded machine: DNS
// timeouts (startWeb's resolver waits 500 ms) must not make a URL fail for
// good after 5 tries, which would read as a URL lost.
func controlConfig(t *testing.T, dir string, srv *testweb.Server, lookup LookupFunc, depth int) NodeConfig {
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	cfg.Scheduler.MaxRetries, cfg.Scheduler.MaxBackoff = 15, 2*time.Second
	return cfg
}

func controlWeb(t *testing.T, seed int64) (*testweb.Server, LookupFunc) {
	return startWeb(t, testweb.Config{Hosts: 16, Seed: seed, MaxPages: 40, MeanPageSize: 3000, Seeds: 3, Plain: true}, &bytes.Buffer{})
}

// startControlled runs a node on a fresh test web in the background and
// returns once it has stored 20 pages.
func startControlled(t *testing.T, seed int64) (*testweb.Server, string, NodeConfig, *Node, *running, context.Context) {
	srv, lookup := controlWeb(t, seed)
	dir := t.TempDir()
	cfg := controlConfig(t, dir, srv, lookup, 3)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	r := goRun(ctx, n)
	waitFor(t, "20 pages", time.Minute, func() bool { return n.Counters().Pages >= 20 })
	return srv, dir, cfg, n, r, ctx
}

// TestNodePauseResume: a pause cuts the lists out and no response comes
// after the lists are gone; resume goes on, and the crawl still ends with
// exactly the truth.
func TestNodePauseResume(t *testing.T) {
	srv, dir, cfg, n, r, _ := startControlled(t, 21)
	n.Pause()
	paused := time.Now()
	waitFor(t, "no list out after pause", 5*time.Second, func() bool { return n.Status().Fetchers.Busy == 0 })
	if d := time.Since(paused); d > time.Second {
		t.Errorf("lists still out %v after the pause", d)
	}
	st := n.Status()
	if st.State != "paused" || st.Totals.Queue == 0 {
		t.Fatalf("after pause: state %s, queue %d (the crawl must not be over)", st.State, st.Totals.Queue)
	}
	// Watch a while: nothing is fetched while paused. (A window of
	// observation, not a synchronisation.)
	fetched := st.Totals.Fetched + st.Totals.FetchErrors
	time.Sleep(time.Second)
	st = n.Status()
	if f := st.Totals.Fetched + st.Totals.FetchErrors; f != fetched || st.Fetchers.Busy != 0 {
		t.Fatalf("paused, yet %d responses more, %d lists out", f-fetched, st.Fetchers.Busy)
	}
	if st.Fetchers.PausedSecs < 1 {
		t.Errorf("paused_seconds %v after a second's pause", st.Fetchers.PausedSecs)
	}
	n.Resume()
	waitFor(t, "a fetch after resume", 30*time.Second, func() bool {
		st := n.Status()
		return st.Totals.Fetched+st.Totals.FetchErrors > fetched
	})
	if <-r.done; r.err != nil {
		t.Fatal(r.err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	got, want := storedURLs(t, dir), truthURLs(t, srv, 3)
	compareSets(t, got, want)
	if t.Failed() {
		explainMissing(t, cfg, got, want)
	}
}

// explainMissing logs what the scheduler knows of the URLs missing from
// the store.
func explainMissing(t *testing.T, cfg NodeConfig, got, want map[string]bool) {
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	var buf []byte
	for id := uint32(0); int(id) < n.tree.Len(); id++ {
		buf, _ = n.tree.Get(id, buf[:0])
		if u := string(buf); want[u] && !got[u] {
			hi, _ := n.sched.HostInfo(n.sched.URL(id).Host)
			t.Logf("missing %s: id %d, %+v, host %+v", u, id, n.sched.URL(id), hi)
		}
	}
}

// TestNodeDrain: drain lets the lists out finish, Run returns ErrDrained
// with everything stored, and a later run finishes the crawl.
func TestNodeDrain(t *testing.T) {
	srv, dir, cfg, n, r, ctx := startControlled(t, 23)
	n.Drain()
	if s := n.Status().State; s != "draining" {
		t.Errorf("state %q after Drain", s)
	}
	<-r.done
	if !errors.Is(r.err, ErrDrained) {
		t.Fatalf("drained run: %v, want ErrDrained", r.err)
	}
	if b := n.Status().Fetchers.Busy; b != 0 {
		t.Errorf("after the drain: %d lists out", b)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	got := uint64(len(storedURLs(t, dir)))
	if got != r.sum.Stored {
		t.Fatalf("drained run stored %d, the store holds %d", r.sum.Stored, got)
	}
	// Synced: every stored page was reported to the scheduler before Close
	// returned, so the next open finds them finished, none in progress.
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := n.Status()
	if st.Totals.Completed+st.Totals.Redirected != got || !n.sched.Opened().Clean || n.sched.Opened().InProgress != 0 {
		t.Errorf("reopened: %d completed + %d redirected, %d stored; opened %+v", st.Totals.Completed, st.Totals.Redirected, got, n.sched.Opened())
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	sum2, err := runNode(t, ctx, cfg)
	if err != nil || !sum2.Finished {
		t.Fatalf("run after the drain: %v, %+v", err, sum2)
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, 3))
}

// TestNodeSet changes the delay and the fetchers at run time.
func TestNodeSet(t *testing.T) {
	srv, lookup := controlWeb(t, 25)
	dir := t.TempDir()
	cfg := controlConfig(t, dir, srv, lookup, 2)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"delay", "-1s"}, {"delay", "soon"}, {"fetchers", "0"}, {"fetchers", "17"}, {"colour", "red"}} {
		if err := n.Set(Setting{kv[0], kv[1]}); err == nil {
			t.Errorf("Set(%s, %s) took it", kv[0], kv[1])
		}
	}
	// One bad setting changes nothing, whichever comes first.
	before := n.Status().Fetchers
	for _, set := range [][]Setting{{{"fetchers", "1"}, {"delay", "soon"}}, {{"delay", "20ms"}, {"fetchers", "0"}}} {
		if err := n.Set(set...); err == nil {
			t.Errorf("Set(%v) took it", set)
		}
		if f := n.Status().Fetchers; f != before {
			t.Errorf("Set(%v) failed but changed the fetchers from %+v to %+v", set, before, f)
		}
	}
	if err := n.Set(Setting{"delay", "20ms"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Set(Setting{"fetchers", "1"}); err != nil {
		t.Fatal(err)
	}
	if f := n.Status().Fetchers; f.Max != 1 || f.DelaySecs != 0.02 {
		t.Fatalf("fetchers %+v after set", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := goRun(ctx, n)
	most := 0
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-r.done:
			running = false
		case <-tick.C:
			most = max(most, int(n.inflight.Load()))
		}
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if most > 1 {
		t.Errorf("%d lists out at once with fetchers=1", most)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, 2))
}
