package spider

import (
	"context"
	"os"
	"testing"
)

const maxPagesCrashChildEnv = "KSPIDER_MAX_PAGES_CRASH_CHILD"

// TestMaxPagesCrashChild is TestMaxPagesCountsStoredUnreported's node:
// two URLs of one host, the first's page stored but unreported.
func TestMaxPagesCrashChild(t *testing.T) {
	dir := os.Getenv(maxPagesCrashChildEnv)
	if dir == "" {
		t.Skip("only run as TestMaxPagesCountsStoredUnreported's child process")
	}
	crashWithUnreportedPage(t, dir, "http://a.test/", "http://a.test/b")
}

// A page a crash left stored but unreported was fetched within
// limits.max_pages, and the next run reports it without a fetch; but the
// count at open took only the scheduler's completed URLs, so that run
// fetched one page more than the limit for each: a crawl killed and
// resumed with max_pages stored past it. Now they count.
func TestMaxPagesCountsStoredUnreported(t *testing.T) {
	if os.Getenv(maxPagesCrashChildEnv) != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	killChildAfter(t, "TestMaxPagesCrashChild", maxPagesCrashChildEnv+"="+dir, "stored")
	cfg := nodeConfigFor(t, dir, nil, noLookup, nil, 2)
	for _, c := range []struct{ max, left int64 }{{2, 1}, {1, 0}} {
		cfg.MaxPages = c.max
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(n.stored) != 1 {
			n.Close()
			t.Fatalf("%d pages stored but unreported after the kill, want 1", len(n.stored))
		}
		left := n.budget.pagesLeft.Load()
		if left != c.left {
			n.Close()
			t.Fatalf("max_pages %d with one page stored before the kill: %d pages left to fetch, want %d", c.max, left, c.left)
		}
		if c.left == 0 {
			sum, err := n.Run(context.Background())
			if err != nil || !sum.LimitReached || sum.Fetched != 0 {
				t.Errorf("run at the limit: %+v, %v", sum, err)
			}
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
