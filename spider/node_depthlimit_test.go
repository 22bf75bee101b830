package spider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
	"github.com/kspider/kspider/urltree"
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
	for i, c := range []struct{ depth, truth int }{{1, 1}, {3, 3}, {2, 3}, {3, 3}} {
		var lines []string
		cfg := nodeConfig(t, dir, srv, lookup, c.depth)
		cfg.Logf = func(f string, a ...any) {
			if m := fmt.Sprintf(f, a...); strings.Contains(m, "max_depth") {
				lines = append(lines, m)
			}
		}
		sum, err := runNode(t, ctx, cfg)
		if err != nil || !sum.Finished {
			t.Fatalf("run to depth %d: %+v, %v", c.depth, sum, err)
		}
		t.Logf("depth %d: stored %d; %q", c.depth, sum.Stored, lines)
		// The pass before anything is fetched is said as it starts: on a
		// large store it takes a while.
		if raised := i == 1 || i == 3; raised != slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, "following the links of the stored pages again, a pass over")
		}) {
			t.Errorf("run to depth %d: the pass's start said %v, want %v: %q", c.depth, !raised, raised, lines)
		}
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
	if err := os.WriteFile(filepath.Join(dir, DepthFile), encodeDepthLimit(3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ScopeFile), []byte("kspider scope 1\nsha256 00\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenNode(nodeConfig(t, dir, srv, lookup, 3)); err == nil || !strings.Contains(err.Error(), ScopeFile) {
		t.Errorf("open with a damaged %s: %v, want it named", ScopeFile, err)
	}
}

// TestNodeDepthLowered: a crawl to limits.max_depth 3 stopped part way,
// run again with 1 to its end, then with 3 again. The URLs queued deeper
// than 1 were fetched all the same by the run at 1 (only their links
// dropped); now they are dropped unfetched, and the run at 3 queues them
// again: its store is the truth to 3, nothing stored twice.
func TestNodeDepthLowered(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	if _, err := runNodeUntil(t, nodeConfig(t, dir, srv, lookup, 3), 40); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first run: %v, want it interrupted", err)
	}
	before := storedURLs(t, dir)
	shallow := truthURLs(t, srv, 1)
	tree, err := urltree.Open(filepath.Join(dir, "urls"), &urltree.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	deeper := 0
	for id := uint32(0); int(id) < tree.Len(); id++ {
		u, err := tree.Get(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !before[string(u)] && !shallow[string(u)] {
			deeper++
		}
	}
	tree.Close()
	if deeper == 0 {
		t.Fatal("the first run left no URL queued deeper than 1")
	}
	t.Logf("first run: %d pages stored, %d URLs known deeper than 1 not stored", len(before), deeper)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := runNode(t, ctx, nodeConfig(t, dir, srv, lookup, 1))
	if err != nil || !sum.Finished {
		t.Fatalf("run to depth 1: %+v, %v", sum, err)
	}
	after := storedURLs(t, dir)
	for u := range after {
		if !before[u] && !shallow[u] {
			t.Errorf("%s, deeper than 1, fetched by the run to depth 1", u)
		}
	}
	for u := range shallow {
		if !after[u] {
			t.Errorf("%s, within depth 1, not stored by the run to depth 1", u)
		}
	}
	sum, err = runNode(t, ctx, nodeConfig(t, dir, srv, lookup, 3))
	if err != nil || !sum.Finished {
		t.Fatalf("run to depth 3 again: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, 3))
}

// TestNodeRaisePassInterrupted: the pass over the stored pages a raised
// limits.max_depth needs, in a run interrupted at once (a Ctrl-C while
// it reads a large store back). The pass went on to the end of the
// store, and the interrupted run waited for it; now the interruption
// stops it, the higher limit is not recorded, and the next run makes the
// pass and ends with the web's truth.
func TestNodeRaisePassInterrupted(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if sum, err := runNode(t, ctx, nodeConfig(t, dir, srv, lookup, 1)); err != nil || !sum.Finished {
		t.Fatalf("run to depth 1: %+v, %v", sum, err)
	}
	var lines []string
	cfg := nodeConfig(t, dir, srv, lookup, 3)
	cfg.Logf = func(f string, a ...any) {
		if l := fmt.Sprintf(f, a...); strings.Contains(l, "again") {
			lines = append(lines, l)
		}
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	if _, err := runNode(t, stopped, cfg); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("run to depth 3 interrupted at once: %v, want ErrInterrupted", err)
	}
	t.Logf("interrupted run: %q", lines)
	if len(lines) != 2 || !strings.Contains(lines[1], "after 0 pages") { // the pass's start, its stop
		t.Errorf("interrupted run: %q, want the pass stopped after 0 pages", lines)
	}
	if got, err := readDepthLimit(dir); err != nil || got != 1 {
		t.Errorf("after the interrupted run, %s says %d (%v), want 1: the pass was cut short", DepthFile, got, err)
	}
	if sum, err := runNode(t, ctx, nodeConfig(t, dir, srv, lookup, 3)); err != nil || !sum.Finished {
		t.Fatalf("run to depth 3: %+v, %v", sum, err)
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, 3))
}

// TestNodeRaiseDamagedPage: a stored page damaged on disk (a byte of its
// record flipped), then limits.max_depth raised. The pass could not read
// it back and said so only under --verbose: its links were not followed,
// and nothing counted it. Now the node's log says how many pages could
// not be read back, naming the first.
func TestNodeRaiseDamagedPage(t *testing.T) {
	var log bytes.Buffer
	srv, lookup := startWeb(t, testweb.Config{Hosts: 40, Seed: 11, MaxPages: 60, MeanPageSize: 4000, Seeds: 3, Plain: true}, &log)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// To depth 0: every page stored is read back by the pass to 1.
	cfg := nodeConfig(t, dir, srv, lookup, 0)
	cfg.Codec = "none" // the URL is found in the segment as it is
	if sum, err := runNode(t, ctx, cfg); err != nil || !sum.Finished {
		t.Fatalf("run to depth 0: %+v, %v", sum, err)
	}
	seg := filepath.Join(dir, "pages", "00000001.seg")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	damaged := ""
	for u := range storedURLs(t, dir) {
		if i := bytes.Index(b, []byte(u)); i >= 0 && i+len(u)+40 < len(b) {
			b[i+len(u)+rand.IntN(40)] ^= 0x5a // (in a record's header block or body)
			damaged = u
			break
		}
	}
	if damaged == "" {
		t.Fatal("no stored page's URL found in the segment")
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	cfg.MaxDepth = 1
	cfg.Logf = func(f string, a ...any) {
		if l := fmt.Sprintf(f, a...); strings.Contains(l, "read back") {
			lines = append(lines, l)
		}
	}
	if _, err := runNode(t, ctx, cfg); err != nil {
		t.Fatalf("run to depth 1: %v", err)
	}
	t.Logf("damaged near %s: %q", damaged, lines)
	if len(lines) != 1 || !strings.Contains(lines[0], "1 stored pages could not be read back") {
		t.Errorf("the pass over a store with one page damaged logged %q, want it counted", lines)
	}
}

// TestDataDirFileNotRegular: IDENTITY or DEPTH made a FIFO (or a
// directory) by a hostile operator. Opening the FIFO blocked, and so did
// the run, for good (a SIGTERM does not end a blocked open); now OpenNode
// refuses it, naming the file.
func TestDataDirFileNotRegular(t *testing.T) {
	for _, name := range []string{IdentityFile, DepthFile, ScopeFile} {
		for _, kind := range []string{"fifo", "dir"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, name)
				var err error
				if kind == "fifo" {
					err = syscall.Mkfifo(path, 0o644)
				} else {
					err = os.Mkdir(path, 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
				opened := make(chan error, 1)
				go func() {
					n, err := OpenNode(NodeConfig{Dir: dir, Lookup: noLookup})
					if err == nil {
						n.Close()
					}
					opened <- err
				}()
				select {
				case err := <-opened:
					if err == nil || !strings.Contains(err.Error(), path) {
						t.Errorf("open with %s a %s: %v, want it refused, naming it", name, kind, err)
					}
				case <-time.After(20 * time.Second):
					// Unblock the open so the test binary can end.
					if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						w.Close()
					}
					t.Fatalf("open with %s a %s did not return", name, kind)
				}
			})
		}
	}
}
