package spider

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// TestNodeDepthRaised: a crawl finished to limits.max_depth 1, then run
// again with 3, then lowered to 2 and raised to 3 again, on one data
// directory. The links beyond the old limit had been dropped and their
// pages were done: the second run "finished" with nothing fetched. Now
// each run's store is the truth to its limit (the lowered run adds
// nothing), nothing stored twice.
func TestNodeDepthRaised(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct{ depth, truth int }{{1, 1}, {3, 3}, {2, 3}, {3, 3}} {
		var lines []string
		cfg := nodeConfig(t, dir, srv, lookup, c.depth)
		cfg.Logf = func(f string, a ...any) {
			if strings.Contains(f, "max_depth") {
				lines = append(lines, f)
			}
		}
		sum, err := runNode(t, ctx, cfg)
		if err != nil || !sum.Finished {
			t.Fatalf("run to depth %d: %+v, %v", c.depth, sum, err)
		}
		t.Logf("depth %d: stored %d; %q", c.depth, sum.Stored, lines)
		compareSets(t, storedURLs(t, dir), truthURLs(t, srv, c.truth))
		if got, err := readDepthLimit(dir); err != nil || got != c.depth {
			t.Errorf("after the run to depth %d, %s says %d (%v)", c.depth, DepthFile, got, err)
		}
	}
	// A damaged file is refused, naming it.
	if err := os.WriteFile(filepath.Join(dir, DepthFile), []byte("kspider depth limit 1\nmax_depth 9\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNode(nodeConfig(t, dir, srv, lookup, 3)); err == nil || !strings.Contains(err.Error(), DepthFile) {
		t.Errorf("open with a damaged %s: %v, want it named", DepthFile, err)
	}
}
