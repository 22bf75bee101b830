package spider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestNodeRobotsAbandonedShown: a robots.txt fetch cut short by the end of
// its list's context (a slot's cutoff, the crawl stopping) caches nothing
// and is counted (robots.Source.Abandoned), but the count was shown
// nowhere: an operator whose slots were too short for a slow robots.txt
// saw its hosts wait and no reason. The run's summary and the status
// (so /metrics) now give it.
func TestNodeRobotsAbandonedShown(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	n, sum := runStoppedAtStall(t, asked, "robots.txt's redirect target", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			// Followed after the list, on a connection of its own.
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
		case "/real-robots.txt":
			once.Do(func() { close(asked) })
			stallUntilGivenUp(r)
		default:
			fmt.Fprint(w, "leaf")
		}
	})
	if got := n.robots.src.Abandoned(); got != 1 || sum.RobotsAbandoned != 1 {
		t.Errorf("robots.txt fetches abandoned: summary %d, counted %d; want 1", sum.RobotsAbandoned, got)
	}
	if st := n.status(true); st.Totals.RobotsAbandoned != 1 {
		t.Errorf("status: robots_abandoned %d, want 1", st.Totals.RobotsAbandoned)
	}
}

// TestNodeRobotsAbandonedOnListConnection: a robots.txt read on its
// list's own connection (a host's first list) and cut short by the list's
// context was counted nowhere, only one fetched on a connection of its
// own was; now it counts in robots_abandoned too.
func TestNodeRobotsAbandonedOnListConnection(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	n, sum := runStoppedAtStall(t, asked, "robots.txt", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			fmt.Fprint(w, "leaf")
			return
		}
		once.Do(func() { close(asked) })
		stallUntilGivenUp(r)
	})
	if got := n.robots.src.Abandoned(); got != 1 || sum.RobotsAbandoned != 1 {
		t.Errorf("robots.txt fetches abandoned: summary %d, counted %d; want 1", sum.RobotsAbandoned, got)
	}
}

// stallUntilGivenUp answers r with nothing until the client gives up (or
// 20 s pass).
func stallUntilGivenUp(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(20 * time.Second):
	}
}

// runStoppedAtStall crawls the site h serves with one node and stops the
// crawl once asked is closed (h's stalled request, named what, came); it
// fails the test unless the crawl was interrupted after that request.
func runStoppedAtStall(t *testing.T, asked chan struct{}, what string, h http.HandlerFunc) (*Node, *NodeSummary) {
	t.Helper()
	cfg, _ := siteNodeConfig(t, h)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case <-asked:
			cancel()
		case <-ctx.Done():
		}
	}()
	sum, err := n.Run(ctx)
	if !errors.Is(err, ErrInterrupted) || sum == nil {
		t.Fatalf("crawl: %+v, %v; want it interrupted", sum, err)
	}
	select {
	case <-asked:
	default:
		t.Fatalf("%s never asked for", what)
	}
	return n, sum
}
