package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchCommunicator(t *testing.T) {
	list := filepath.Join(t.TempDir(), "urls.txt")
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "http://www.host%d.example/dir/page-%d.html\n", i%50, i)
	}
	b.WriteString("http://www.host1.example/dir/page-1.html\n") // a duplicate
	b.WriteString("http://long.example/" + strings.Repeat("x", 2000) + "\n")
	if err := os.WriteFile(list, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "bench", "communicator", "--urls", list, "--json", "--loss", "0.1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		URLs       int `json:"urls"`
		Duplicates int `json:"duplicate_lines"`
		TooLong    int `json:"too_long"`
		Runs       []map[string]float64
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.URLs != 3000 || r.Duplicates != 1 || r.TooLong != 1 || len(r.Runs) != 2 {
		t.Fatalf("urls %d, duplicates %d, too long %d, runs %d; want 3000, 1, 1, 2", r.URLs, r.Duplicates, r.TooLong, len(r.Runs))
	}
	for _, run := range r.Runs {
		for _, k := range []string{"urls_per_s", "cpu_us_per_url", "datagrams_per_1000_urls", "wire_ratio"} {
			if run[k] <= 0 {
				t.Errorf("loss %v: %s = %v", run["loss"], k, run[k])
			}
		}
	}
	if r.Runs[1]["retransmits"] == 0 {
		t.Error("10% loss without retransmissions")
	}
	if code, out, _ := runCmd(t, "", "bench", "communicator", "--urls", list, "--limit", "100"); code != 0 || !strings.Contains(out, "wire_ratio") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", "bench", "communicator", "--urls", list, "--loss", "1"); code != 2 {
		t.Errorf("--loss 1: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "bench", "communicator", "--urls", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing list: exit %d, want 1", code)
	}
}
