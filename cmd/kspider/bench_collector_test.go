package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchCollector runs a small `kspider bench collector` with the test
// web in process and checks the report's shape and that every mode fetched
// every page.
func TestBenchCollector(t *testing.T) {
	code, out, errOut := runCmd(t, "", "bench", "collector", "--in-process", "--hosts", "8", "--pages", "300", "--rounds", "1", "--nginx=false", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep benchCollectorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Corpora) != 1 || rep.Corpora[0].Pages == 0 || len(rep.Corpora[0].Modes) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, m := range rep.Corpora[0].Modes {
		if m.Errors != 0 || m.PagesPerSec <= 0 || m.PagesPerCPUSec <= 0 || m.WireBytesPerPg <= 0 || m.VsNetHTTP <= 0 {
			t.Errorf("mode %+v", m)
		}
	}
	if m := rep.Corpora[0].Modes[2]; m.Mode != "collector-pipeline-8" || m.PipelinedShare < 0.5 {
		t.Errorf("pipelined mode %+v", m)
	}
	code, out, _ = runCmd(t, "", "bench", "collector", "--in-process", "--hosts", "4", "--pages", "50", "--rounds", "1", "--nginx=false")
	if code != 0 || !strings.Contains(out, "collector-pipeline-8") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", "bench", "collector", "--rounds", "0"); code != 2 {
		t.Errorf("--rounds 0: exit %d", code)
	}
}
