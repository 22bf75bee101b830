package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchURLTree(t *testing.T) {
	list := filepath.Join(t.TempDir(), "urls.txt")
	content := "http://a.com/\n\nhttp://a.com/x\nhttp://b.org/\nhttp://a.com/\r\nhttps://a.com/y\n"
	if err := os.WriteFile(list, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "bench", "urltree", "--urls", list, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r map[string]float64
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"urls", "raw_bytes_per_url", "bytes_per_url", "file_bytes_per_url", "ratio",
		"add_ns", "find_ns", "get_ns", "heap_bytes_per_url", "map_add_ns", "map_find_ns"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if r["urls"] != 4 || r["blank_lines"] != 1 || r["duplicate_lines"] != 1 {
		t.Errorf("urls %v, blank %v, duplicates %v; want 4, 1, 1", r["urls"], r["blank_lines"], r["duplicate_lines"])
	}

	code, out, _ = runCmd(t, "", "bench", "urltree", "--urls", list, "--limit", "2")
	if code != 0 || !strings.Contains(out, "Find ns") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "", "bench", "urltree"); code != 2 {
		t.Errorf("without --urls: exit %d, want 2", code)
	}
	if code, _, _ := runCmd(t, "", "bench", "urltree", "--urls", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Errorf("missing list: exit %d, want 1", code)
	}
}
