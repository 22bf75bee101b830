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

// TestBenchStrayArguments: bench collector, cluster and storage ignored
// arguments that are not flags ("bench collector 3" ran the whole
// benchmark), and bench collector checked --mode only once its test web's
// child process was up (and with no corpus, not at all: an empty report and
// exit 0 for --testweb=false --nginx=false). Each case here
// would fail fast on another check without the fix.
func TestBenchStrayArguments(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "collector", "--hosts", "0", "stray"},
		{"bench", "cluster", "--nodes", "1", "stray"},
		{"bench", "storage", "stray"},
	} {
		code, out, errOut := runCmd(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, `unexpected argument "stray"`) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for flag, args := range map[string][]string{
		"--mode":                 {"bench", "collector", "--testweb=false", "--nginx=false", "--mode", "bogus"},
		"--nginx-repeat":         {"bench", "collector", "--testweb=false", "--nginx=false", "--nginx-repeat", "0"},
		"leave nothing to fetch": {"bench", "collector", "--testweb=false", "--nginx=false"},
	} {
		if code, out, errOut := runCmd(t, "", args...); code != 2 || out != "" || !strings.Contains(errOut, flag) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
