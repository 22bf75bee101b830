package spider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kspider/kspider/tools/testweb"
)

// TestNodePastUnknown: a crawl finished to limits.max_depth 1 (and with
// limits.max_links_per_page 2), its DEPTH (or SCOPE) deleted, as their
// damage messages advise, then run with the limit raised to 3 (the cap
// lifted). The missing file was taken as crawled to this run's limit and
// scope: the pass was skipped and the run "finished" without the deeper
// pages, exit 0. Now the directory makes the full pass, said on stderr,
// and its store is the web's truth.
func TestNodePastUnknown(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	const depth = 3
	for _, c := range []struct {
		file  string
		first func(*NodeConfig)
	}{
		{DepthFile, func(c *NodeConfig) { c.MaxDepth = 1 }},
		{ScopeFile, func(c *NodeConfig) { c.MaxLinks = 2 }},
	} {
		dir := t.TempDir()
		cfg := nodeConfig(t, dir, srv, lookup, depth)
		c.first(&cfg)
		if sum, err := runNode(t, t.Context(), cfg); err != nil || !sum.Finished {
			t.Fatalf("%s: first run: %+v, %v", c.file, sum, err)
		}
		if err := os.Remove(filepath.Join(dir, c.file)); err != nil {
			t.Fatal(err)
		}
		var (
			mu    sync.Mutex
			lines []string
		)
		cfg = nodeConfig(t, dir, srv, lookup, depth)
		cfg.Logf = func(f string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf(f, a...))
		}
		if sum, err := runNode(t, t.Context(), cfg); err != nil || !sum.Finished {
			t.Fatalf("%s: run after it was deleted: %+v, %v", c.file, sum, err)
		}
		mu.Lock()
		said := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, c.file+" missing in "+dir) })
		mu.Unlock()
		if !said {
			t.Errorf("%s deleted: the pass was not said: %q", c.file, lines)
		}
		compareSets(t, storedURLs(t, dir), truthURLs(t, srv, depth))
		if _, err := os.Stat(filepath.Join(dir, c.file)); err != nil {
			t.Errorf("%s not recorded again after the pass: %v", c.file, err)
		}
	}
}
