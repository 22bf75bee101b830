package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchStorage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		page := fmt.Sprintf("<html><body>%s</body></html>", strings.Repeat(fmt.Sprintf("<p>row %d</p>\n", i), 200+i*50))
		name := filepath.Join(dir, fmt.Sprintf("p%d.html", i))
		if i%3 == 0 {
			name = filepath.Join(dir, "sub", fmt.Sprintf("p%d.htm", i))
		}
		if err := os.WriteFile(name, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "style.css"), []byte("body{}"), 0o644) // not HTML: ignored

	code, out, errOut := runCmd(t, "", "bench", "storage", "--html", dir, "--disks", "2", "--min-mb", "0.5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep storageBenchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep.Files != 12 || rep.Disks != 2 || rep.Repeat < 2 || len(rep.Codecs) != 4 {
		t.Fatalf("report %+v", rep)
	}
	for i, c := range rep.Codecs {
		if c.Codec != []string{"lzo", "s2", "zstd", "none"}[i] || c.Pages != 12*rep.Repeat || c.RawMB < 0.5 ||
			c.StoredMB <= 0 || c.Ratio <= 0 || c.WriteMBs <= 0 || c.ReadMBs <= 0 {
			t.Errorf("codec line %+v", c)
		}
		if c.Codec != "none" && c.Ratio < 2 {
			t.Errorf("%s compresses repetitive HTML only %.2f:1", c.Codec, c.Ratio)
		}
	}

	code, out, errOut = runCmd(t, "", "bench", "storage", "--html", dir, "--codec", "s2", "--min-mb", "0.1")
	if code != 0 || !strings.Contains(out, "write_mb_s") || !strings.Contains(out, "\ns2 ") {
		t.Fatalf("text output: exit %d\n%s%s", code, out, errOut)
	}
}

func TestBenchStorageErrors(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "storage"}, 2, "--html"},
		{[]string{"bench", "storage", "--html", empty, "--codec", "lz4"}, 2, "unknown codec"},
		{[]string{"bench", "storage", "--html", empty, "--disks", "0"}, 2, "--disks"},
		{[]string{"bench", "storage", "--html", empty}, 1, "no HTML files"},
		{[]string{"bench", "storage", "--html", "/nonexistent/kspider"}, 1, "/nonexistent/kspider"},
	} {
		code, _, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
