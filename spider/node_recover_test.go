package spider

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kspider/kspider/urltree"
)

// After a crash a page found in the store under an unfinished URL's id
// counts as stored only if it is that URL's.
func TestStoredAs(t *testing.T) {
	tree, err := urltree.Open(filepath.Join(t.TempDir(), "urls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	id, _, err := tree.AddString("http://a.example/")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	n := &Node{tree: tree, cfg: NodeConfig{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}}
	if !n.storedAs(id, "http://a.example/") || len(logs) != 0 {
		t.Errorf("its own page: not taken, logs %q", logs)
	}
	if n.storedAs(id, "http://b.example/") || len(logs) != 1 || !strings.Contains(logs[0], `the page store holds "http://b.example/" under URL id 0`) {
		t.Errorf("another URL's page: taken, or logs %q", logs)
	}
}
