package spider

import (
	"context"
	"errors"
	"testing"
)

// A Drain during the pass a raised depth limit (or a changed scope) makes
// over the stored pages did not cut it: the drained node, asked to stop
// soon, went on reading the store for as long as the pass took (hours on
// a large one), then recorded the new limit. Now a drain cuts the pass
// as a Ctrl-C does: Run returns ErrDrained, the limit is not recorded,
// and the next run makes the pass again.
func TestNodeRaisePassDrained(t *testing.T) {
	dir := t.TempDir()
	cfg := nodeConfigFor(t, dir, nil, noLookup, nil, 1)
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.seeOne("http://a.test/", 0, map[uint32]pageLinks{})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.MaxDepth = 2
	if n, err = OpenNode(cfg); err != nil {
		t.Fatal(err)
	}
	if n.raiseFrom != 1 {
		n.Close()
		t.Fatalf("raiseFrom %d after the limit was raised from 1 to 2", n.raiseFrom)
	}
	n.Drain() // before the pass's first look
	_, runErr := n.Run(context.Background())
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(runErr, ErrDrained) {
		t.Errorf("run drained during the pass: %v, want ErrDrained", runErr)
	}
	if d, err := readDepthLimit(dir); err != nil || d != 1 {
		t.Errorf("after the drained pass: DEPTH says %d, %v; want 1, the pass to be made again", d, err)
	}
}
