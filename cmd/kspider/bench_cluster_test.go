package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// TestBenchCluster runs the cluster benchmark on a small web, with this
// test binary standing in for kspider (TestLabChild): one node and three
// store the same pages, and the figures are filled in; three separate
// nodes crawl webs of their own about as large.
func TestBenchCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := clusterBench{depth: 2, phase: time.Second, command: func(args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLabChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KSPIDER_LAB_CHILD=run", "KSPIDER_LAB_ARGS="+strings.Join(args, "\x1f"))
		return cmd
	}}
	runs, err := b.runAll(ctx, testweb.Config{Hosts: 30, Seed: 2, MaxPages: 5, Seeds: 5, Plain: true}, 3, []string{"url", "host", separatePart}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		t.Logf("%+v", r)
		if r.Pages == 0 || r.CPUmsPerPage <= 0 || len(r.PagesPerNode) != r.Nodes || r.Balance < 1 {
			t.Errorf("run %+v: figures missing", r)
		}
		switch {
		case r.Partition == separatePart:
			if r.DgramPerPage != 0 || r.Pages < runs[0].Pages/2 || r.Pages > runs[0].Pages*2 {
				t.Errorf("separate run %+v: want no exchange and about %d pages", r, runs[0].Pages)
			}
		case r.Nodes > 1 && (r.DgramPerPage <= 0 || r.BytesPerPage <= 0):
			t.Errorf("run %+v: no exchange counted", r)
		}
	}
	if code, _, _ := runCmd(t, "", "bench", "cluster", "--nodes", "1"); code != 2 {
		t.Errorf("--nodes 1: exit %d, want 2", code)
	}
}
