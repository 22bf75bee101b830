package spider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/robots"
)

// TestNodeRobotsUnsentAtStop: a stop (List.Stop) that came before a host's
// first list sent its robots.txt gave robots.txt back NotTried while the
// list's context lived on (StopGrace), and the hook took that for an
// unreachable robots.txt: "unreachable" logged, the host's robots.txt
// marked unreachable with a back-off, every URL of the list FailedTemp (a
// retry spent at each stop). Now nothing is recorded and the URLs come
// back NotTried.
func TestNodeRobotsUnsentAtStop(t *testing.T) {
	var hits atomic.Int64
	cfg, seed := siteNodeConfig(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "leaf")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The stop comes while the list's connection is being dialled: the
	// collector's lookup is the first thing the list does, and robots.txt
	// is sent only after it.
	var stopOnce sync.Once
	cfg.Lookup = func(context.Context, string) ([]netip.Addr, error) {
		stopOnce.Do(cancel)
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	// Long enough that the list's context outlives the test's stop: only
	// List.Stop ends the list.
	cfg.StopGrace = 30 * time.Second
	var logMu sync.Mutex
	var logged []string
	cfg.URLLogf = func(format string, args ...any) {
		logMu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		logMu.Unlock()
		t.Logf(format, args...)
	}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// A list handed out after a Resume runs under the context that lasts
	// StopGrace past the stop (one handed out before any pause is cut at
	// the stop: node_control.go's startControl).
	n.Pause()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		for ctx.Err() == nil {
			n.ctl.mu.Lock()
			started := n.ctl.runCtx != nil
			n.ctl.mu.Unlock()
			if started {
				n.Resume()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	sum, err := n.Run(ctx)
	<-resumed
	if !errors.Is(err, ErrInterrupted) || sum == nil {
		t.Fatalf("crawl: %+v, %v; want it interrupted", sum, err)
	}
	if h := hits.Load(); h != 0 {
		t.Fatalf("the server saw %d requests; want none (stopped before robots.txt)", h)
	}
	logMu.Lock()
	for _, l := range logged {
		if strings.Contains(l, "unreachable") {
			t.Errorf("logged %q for a robots.txt never sent", l)
		}
	}
	logMu.Unlock()
	if sum.Errors != 0 {
		t.Errorf("%d fetch errors counted; want none", sum.Errors)
	}
	var ids int
	for id := range uint32(n.sched.Len()) {
		u := n.sched.URL(id)
		if u.State == scheduler.Absent {
			continue
		}
		ids++
		if u.Retries != 0 {
			t.Errorf("URL %d: %d retries spent, state %v; want none (NotTried)", id, u.Retries, u.State)
		}
		hi, err := n.sched.HostInfo(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		if hi.Robots == scheduler.RobotsUnreachable || !hi.RetryUntil.IsZero() || hi.ErrStreak != 0 {
			t.Errorf("host %s: robots %v, retry until %v, error streak %d; want no back-off", hi.Name, hi.Robots, hi.RetryUntil, hi.ErrStreak)
		}
	}
	if ids == 0 {
		t.Fatal("no URL in the scheduler")
	}
	if _, failures := n.robots.src.Cache.ID(robots.OriginOf(seed)); failures != 0 {
		t.Errorf("robots.txt cached with %d failures; want none", failures)
	}
}
