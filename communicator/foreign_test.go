package communicator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestForeignSpillWarned: an endpoint opens only spill-<self>-<peer> of its
// own peers, so a spill file another node wrote, or one for a peer it does
// not have, would lose its items without a word: New names each, and
// ForeignSpill lists them (kspider check reports them as problems).
func TestForeignSpillWarned(t *testing.T) {
	dir := t.TempDir()
	// Node 1 of 2: its own file to node 2 is made by New; these are not its.
	for _, name := range []string{"spill-2-1", "spill-1-7", "spill-1-1", "spill-1-2.bad-16", "state.tmp", "notes"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var logged []string
	newCluster(t, 2, func(i int, c *Config) {
		if i == 0 {
			c.SpillDir = dir
			c.Logf = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				logged = append(logged, fmt.Sprintf(format, args...))
			}
		}
	})
	mu.Lock()
	all := strings.Join(logged, "\n")
	mu.Unlock()
	for _, want := range []string{
		"spill file " + filepath.Join(dir, "spill-2-1") + " is not this node's to send (node 2 wrote it, not node 1)",
		"spill file " + filepath.Join(dir, "spill-1-7") + " is not this node's to send (node 1 has no peer 7)",
		"spill file " + filepath.Join(dir, "spill-1-1") + " is not this node's to send (node 1 has no peer 1)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "spill-1-2 ") || strings.Contains(all, "bad-16") || strings.Contains(all, "notes") {
		t.Errorf("its own or other files named:\n%s", all)
	}
	got, err := ForeignSpill(dir, 1, func(p NodeID) bool { return p == 2 })
	if err != nil || len(got) != 3 {
		t.Fatalf("ForeignSpill = %v, %v", got, err)
	}
	if got, err := ForeignSpill(filepath.Join(dir, "none"), 1, nil); got != nil || err != nil {
		t.Fatalf("ForeignSpill(missing) = %v, %v", got, err)
	}
}
