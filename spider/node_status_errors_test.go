package spider

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
)

// TestStatusErrorsCountSentOnly: one response that times out ends its
// list, the rest never sent (they come back with its kind, no attempt).
// /status's errors and kspider_fetch_errors_total count one timeout, the
// URLs never sent not-tried; they counted a timeout for each.
func TestStatusErrorsCountSentOnly(t *testing.T) {
	const pages = 19
	var stalled atomic.Bool
	seeds := streamWeb(t, pages, 100, func(path string) {
		if path == "/p1" && stalled.CompareAndSwap(false, true) {
			time.Sleep(time.Second)
		}
	})
	cfg := streamConfig(t, seeds)
	cfg.Collector.Pipeline = 1
	cfg.Collector.FirstByte = 200 * time.Millisecond
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sum, runErr := n.Run(ctx)
	st := n.Status()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if !sum.Finished || sum.Stored != pages+1 {
		t.Fatalf("stored %d pages (finished %v), want %d", sum.Stored, sum.Finished, pages+1)
	}
	if !stalled.Load() {
		t.Fatal("no response stalled")
	}
	timeouts, unsent := st.Errors[collector.Timeout.String()], st.Errors[collector.NotTried.String()]
	if timeouts != 1 || unsent == 0 {
		t.Errorf("errors %v: want 1 timeout and the URLs never sent not-tried", st.Errors)
	}
	if st.Totals.FetchErrors != 1 {
		t.Errorf("fetch_errors %d, want 1", st.Totals.FetchErrors)
	}
}
