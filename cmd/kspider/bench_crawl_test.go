package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestBenchCrawl runs a tiny `kspider bench crawl` in process (the test
// binary is not kspider, so no crawl child) and checks the report's shape:
// the test web crawled to the end without errors, figures filled in.
func TestBenchCrawl(t *testing.T) {
	code, out, errOut := runCmd(t, "", "bench", "crawl", "--in-process", "--web-hosts", "12", "--web-pages", "20", "--nginx=false", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep benchCrawlReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Crawls) != 1 || rep.Measured != "in process" || rep.CPUs < 1 {
		t.Fatalf("report %+v", rep)
	}
	c := rep.Crawls[0]
	k := c.KSpider
	if c.Corpus != "testweb-plain" || c.Hosts != 12 || !k.Finished || k.Pages < 12 || k.Errors != 0 ||
		k.PagesPerS <= 0 || k.MBPerS <= 0 || k.CPUMsPerPage <= 0 || k.PeakRSSMB <= 0 || c.Colly != nil {
		t.Errorf("crawl %+v", c)
	}

	code, out, _ = runCmd(t, "", "bench", "crawl", "--in-process", "--web-hosts", "4", "--web-pages", "5", "--nginx=false")
	if code != 0 || !strings.Contains(out, "testweb-plain") || !strings.Contains(out, "kspider") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"--pipeline", "0"}, {"--web-hosts", "0"}, {"extra"}} {
		if code, _, _ := runCmd(t, "", append([]string{"bench", "crawl"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := runCmd(t, "{not json", "bench", "crawl", "--child"); code != 1 || !strings.Contains(errOut, "crawl spec") {
		t.Errorf("bad child spec: exit %d: %s", code, errOut)
	}
}

func TestMedianFigures(t *testing.T) {
	fs := []crawlFigures{
		{Pages: 10, Seconds: 3, PagesPerS: 100, CPUMsPerPage: 0.5, PeakRSSMB: 40, Finished: true},
		{Pages: 11, Seconds: 1, PagesPerS: 300, CPUMsPerPage: 0.9, PeakRSSMB: 20, Finished: true},
		{Pages: 12, Seconds: 2, PagesPerS: 200, CPUMsPerPage: 0.7, PeakRSSMB: 30, Finished: false},
	}
	m := medianFigures(fs)
	if m.Pages != 12 || m.PagesPerS != 200 || m.CPUMsPerPage != 0.7 || m.PeakRSSMB != 30 || m.Finished {
		t.Errorf("median of three: %+v", m)
	}
	if fs[0].Seconds != 3 {
		t.Error("medianFigures reordered its argument")
	}
	r := medianRatios([]crawlRatios{{PagesPerS: 2, CPUPerPage: 0.2, PeakRSS: 1}, {PagesPerS: 4, CPUPerPage: 0.4, PeakRSS: 0.5}})
	if r.PagesPerS != 3 || math.Abs(r.CPUPerPage-0.3) > 1e-9 || r.PeakRSS != 0.75 {
		t.Errorf("median of two: %+v", r)
	}
}

// TestPeakRSSIsTheChilds: a small child's peak RSS is its own, not this
// (larger) test process's, which wait4's ru_maxrss would report.
func TestPeakRSSIsTheChilds(t *testing.T) {
	sleep, err := exec.LookPath("sleep") // coreutils: always there
	if err != nil {
		t.Fatal(err)
	}
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	mb, err := runPeakRSS(exec.Command(sleep, "0.2"))
	if err != nil {
		t.Fatal(err)
	}
	if mb <= 0 || mb > 32 {
		t.Errorf("sleep's peak RSS: %.1f MB, want (0, 32] (this process holds 64 MB more)", mb)
	}
	runtime.KeepAlive(ballast)
}
