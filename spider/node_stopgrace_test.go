package spider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestNodeStopGraceFirstLists: the lists handed out before any pause ran
// under a context cut at the stop itself, not StopGrace after it (only a
// list handed out after a Resume had the grace), so a stop (SIGTERM,
// kspider ctl stop) threw away the responses the first lists had asked
// for, fetched again after the restart: what 0eee218 meant to stop. Now
// every list gets the grace: a response asked for before the stop is
// read and stored.
func TestNodeStopGraceFirstLists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, _ := siteNodeConfig(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		cancel() // the stop, while this response is on its way
		time.Sleep(300 * time.Millisecond)
		fmt.Fprint(w, "<html>leaf</html>")
	})
	cfg.StopGrace = 20 * time.Second
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	sum, err := n.Run(ctx)
	// Interrupted; or finished, when the page, the site's only one, was
	// durable before Run looked: nothing was left to crawl.
	if sum == nil || !errors.Is(err, ErrInterrupted) && !(err == nil && sum.Finished) {
		t.Fatalf("crawl: %+v, %v; want it interrupted, or finished", sum, err)
	}
	if sum.Stored != 1 {
		t.Errorf("stored %d pages, fetched %d; want the page whose response was asked for before the stop", sum.Stored, sum.Fetched)
	}
}
