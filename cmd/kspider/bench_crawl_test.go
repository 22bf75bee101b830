package main

import (
	"encoding/json"
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
