package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchScheduler(t *testing.T) {
	list := filepath.Join(t.TempDir(), "urls.txt")
	content := "http://a.com/\n\nhttp://a.com/x\nhttp://B.org:8080/\nhttp://a.com/\r\nhttps://user@a.com/y\nhttp:///nohost\nhttp://c.net/?q\n"
	if err := os.WriteFile(list, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "bench", "scheduler", "--urls", list, "--phases", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]float64
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"urls", "hosts", "add_ns", "urls_per_s", "state_bytes_per_url", "host_bytes", "open_ms", "peak_rss_mb"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if r["urls"] != 5 || r["hosts"] != 3 || r["bad_host_urls"] != 1 {
		t.Errorf("urls %v, hosts %v, bad %v; want 5, 3, 1", r["urls"], r["hosts"], r["bad_host_urls"])
	}
	code, out, _ = runCmd(t, "", "bench", "scheduler", "--urls", list)
	if code != 0 || !strings.Contains(out, "reopen ms") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", "bench", "scheduler"); code != 2 {
		t.Errorf("without --urls: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "bench", "scheduler", "--urls", list, "--phases", "0"); code != 2 {
		t.Errorf("--phases 0: exit %d, want 2", code)
	}
}
