package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/tools/testweb"
)

// TestBenchCluster runs the cluster benchmark on a small web, with this
// test binary standing in for kspider (TestLabChild): one node and three
// store the same pages, and the figures are filled in; three separate
// nodes crawl webs of their own about as large, at once and one at a time.
func TestBenchCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := clusterBench{depth: 2, phase: time.Second, command: func(args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLabChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KSPIDER_LAB_CHILD=run", "KSPIDER_LAB_ARGS="+strings.Join(args, "\x1f"))
		return cmd
	}}
	runs, err := b.runAll(ctx, testweb.Config{Hosts: 30, Seed: 2, MaxPages: 5, Seeds: 5, Plain: true}, 3, []string{"url", "host", separatePart, alonePart}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		t.Logf("%+v", r)
		if r.Pages == 0 || r.CPUmsPerPage <= 0 || len(r.PagesPerNode) != r.Nodes || r.Balance < 1 {
			t.Errorf("run %+v: figures missing", r)
		}
		switch {
		case noCluster(r.Partition):
			if r.DgramPerPage != 0 || r.Pages < runs[0].Pages/2 || r.Pages > runs[0].Pages*2 {
				t.Errorf("%s run %+v: want no exchange and about %d pages", r.Partition, r, runs[0].Pages)
			}
		case r.Nodes > 1 && (r.DgramPerPage <= 0 || r.BytesPerPage <= 0):
			t.Errorf("run %+v: no exchange counted", r)
		}
	}
	for i, r := range runs {
		if want := i != 0 && r.Partition != separatePart; (r.CPURatioSeparate > 0) != want {
			t.Errorf("%d nodes, %s: ratio to separate %v, want one: %v", r.Nodes, r.Partition, r.CPURatioSeparate, want)
		}
	}
	if sep, alone := runs[3], runs[4]; sep.Pages != alone.Pages {
		t.Errorf("separate stored %d pages (per node %v, URLs %v, errors %v), alone %d (per node %v, URLs %v, errors %v): want the same webs",
			sep.Pages, sep.PagesPerNode, sep.URLsPerNode, sep.ErrorsPerNode, alone.Pages, alone.PagesPerNode, alone.URLsPerNode, alone.ErrorsPerNode)
	}
	if code, _, _ := runCmd(t, "", "bench", "cluster", "--nodes", "1"); code != 2 {
		t.Errorf("--nodes 1: exit %d, want 2", code)
	}
}

// TestBenchClusterLogsDir: --logs names a directory the bench makes before
// it crawls; one it cannot make fails at once, naming it, instead of after
// the crawl, when the first node's output is written.
func TestBenchClusterLogsDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(file, "logs")
	code, _, stderr := runCmd(t, "", "bench", "cluster", "--nodes", "2", "--hosts", "2", "--rounds", "1", "--partitions", "url", "--logs", bad)
	if code != 1 || !strings.Contains(stderr, "--logs "+bad) {
		t.Fatalf("--logs under a file: exit %d, stderr %q; want 1 naming --logs %s", code, stderr, bad)
	}
}

// TestLogCounterSources: two webs' logs flushed in blocks that end inside
// lines, interleaved, are counted line by line, each web's on its own.
func TestLogCounterSources(t *testing.T) {
	var l logCounter
	a, b := l.source(), l.source()
	la := `{"ev":"req","start":1,"end":1795000000000000001,"host":"a"}` + "\n" + `{"ev":"conn"}` + "\n"
	lb := `{"ev":"req","start":2,"end":1795000000000000002,"host":"b"}` + "\n"
	a.Write([]byte(la[:30]))
	b.Write([]byte(lb[:25]))
	a.Write([]byte(la[30:]))
	b.Write([]byte(lb[25:]))
	if conns, reqs := l.counts(); conns != 1 || reqs != 2 {
		t.Errorf("counted %d connections, %d requests; want 1, 2", conns, reqs)
	}
	if got := l.last(); got != 1795000000000000002 {
		t.Errorf("last end %d; want 1795000000000000002", got)
	}
}

// TestCountsOfRun: the bench reads the URLs and errors off a run's counts
// line, of this build (with the robots denied too costly to check) and of
// one before.
func TestCountsOfRun(t *testing.T) {
	sum := &spider.NodeSummary{Fetched: 9, Stored: 8, Errors: 5, Denied: 3, DeniedOverBudget: 2, RobotsAbandoned: 4, URLs: 41}
	for _, out := range []string{
		"progress\n" + countsLine(sum) + "\ncluster: node 0 of 1\n",
		"fetched 9, stored 8, errors 5, robots denied 3, too deep 0, rejected 0, URLs 41\n",
	} {
		if urls, errs := countsOfRun(out); urls != 41 || errs != 5 {
			t.Errorf("countsOfRun(%q) = %d URLs, %d errors; want 41, 5", out, urls, errs)
		}
	}
	if !strings.Contains(countsLine(sum), "robots denied 3 (2 too costly to check)") || !strings.Contains(countsLine(sum), ", robots.txt fetches abandoned 4, URLs 41") {
		t.Errorf("counts line %q", countsLine(sum))
	}
}
