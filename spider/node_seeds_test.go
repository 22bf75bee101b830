package spider

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNodeSeedsOutOfScope: seeds the scope refuses (an include mistyped,
// an exclude too wide) were counted rejected among the links and nothing
// more: with all of them refused the crawl "finished" at once, exit 0,
// with nothing said. Now the node says how many, naming the first and why.
func TestNodeSeedsOutOfScope(t *testing.T) {
	seeds := streamWeb(t, 4, 100, nil)
	cfg := streamConfig(t, seeds)
	sc := scopeNone()
	sc.Exclude = []string{`/p[12]$`}
	cfg.Scope = &sc
	var mu sync.Mutex
	var lines strings.Builder
	cfg.Logf = func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&lines, f+"\n", a...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("crawl: %+v, %v", sum, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := fmt.Sprintf("2 of the %d seeds are outside the scope, not crawled (first: %q: excluded)", len(seeds), seeds[2])
	if !strings.Contains(lines.String(), want) {
		t.Errorf("the node's lines do not say %q:\n%s", want, lines.String())
	}
}
