package spider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/cluster"
)

// A start refused after it compared the directory's DEPTH and SCOPE with
// its config wrote the lowered limit or the narrowed scope all the same:
// the next start, with the config the directory was crawled under, took
// the limit for raised, or the scope for changed, and made the pass over
// every stored page again. Now they are recorded only once the start can
// no longer be refused.
func TestRefusedStartRecordsNoLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := nodeConfigFor(t, dir, nil, noLookup, nil, 3)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ScopeFile), []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.MaxDepth = 1
	if n, err := OpenNode(cfg); err == nil {
		n.Close()
		t.Fatal("a start with SCOPE damaged: not refused")
	}
	if d, err := readDepthLimit(dir); err != nil || d != 3 {
		t.Errorf("after a start at max_depth 1 refused: DEPTH says %d, %v; want 3, as crawled", d, err)
	}
}

// The same for a narrowed scope, the start refused by its cluster record.
func TestRefusedStartRecordsNoScope(t *testing.T) {
	cfg := clusterOf(t, 1, time.Second, cluster.ByHost, func(dir string) NodeConfig {
		return nodeConfigFor(t, dir, nil, noLookup, nil, 2)
	})[0]
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	was, _, err := readScope(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, ClusterFile), []byte("junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	narrow := *cfg.Scope
	narrow.Exclude = append(narrow.Exclude, "^http://b\\.test/")
	cfg.Scope = &narrow
	n, err = OpenNode(cfg)
	if err == nil {
		n.Close()
		t.Fatal("a start with CLUSTER damaged: not refused")
	}
	if !strings.Contains(err.Error(), ClusterFile) {
		t.Fatalf("refused for another reason: %v", err)
	}
	if now, _, err := readScope(cfg.Dir); err != nil || now != was {
		t.Errorf("after a start with a narrowed scope refused: SCOPE records %s, %v; want %s, as crawled", now, err, was)
	}
}
