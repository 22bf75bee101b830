package spider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
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
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			// Followed after the list, on a connection of its own.
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
		case "/real-robots.txt":
			once.Do(func() { close(asked) })
			select { // stalled until the crawl gives up (or 20 s)
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		default:
			fmt.Fprint(w, "leaf")
		}
	})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	seed := fmt.Sprintf("http://site.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, t.TempDir(), []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 1)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond, FirstByte: 30 * time.Second, ResponseTimeout: 30 * time.Second}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
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
		t.Fatal("robots.txt's redirect target never asked for")
	}
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
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			fmt.Fprint(w, "leaf")
			return
		}
		once.Do(func() { close(asked) })
		select { // stalled until the crawl gives up (or 20 s)
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	seed := fmt.Sprintf("http://site.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg := nodeConfigFor(t, t.TempDir(), []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 1)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond, FirstByte: 30 * time.Second, ResponseTimeout: 30 * time.Second}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond}
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
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
		t.Fatal("robots.txt never asked for")
	}
	if got := n.robots.src.Abandoned(); got != 1 || sum.RobotsAbandoned != 1 {
		t.Errorf("robots.txt fetches abandoned: summary %d, counted %d; want 1", sum.RobotsAbandoned, got)
	}
}
