package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kspider/kspider/tools/stats"
	"github.com/kspider/kspider/tools/stats/storetest"
)

func buildTestStore(t *testing.T, ndirs int, codec string) (dirs, args []string) {
	t.Helper()
	for range ndirs {
		dirs = append(dirs, t.TempDir())
	}
	storetest.Build(t, dirs, codec, storetest.Pages())
	for _, d := range dirs {
		args = append(args, "--data", d)
	}
	return dirs, args
}

// compressionTable matches the one table that depends on the codec's output
// size, absent from the golden files (which the stats package's tests
// produce without a stored size).
var compressionTable = regexp.MustCompile(`(?s)\nCompression\n.*?\n\n`)

func TestStatsTextMatchesGolden(t *testing.T) {
	_, args := buildTestStore(t, 2, "lzo")
	code, out, errOut := runCmd(t, "", append([]string{"stats"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !compressionTable.MatchString(out) {
		t.Fatalf("no compression table:\n%s", out)
	}
	want, err := os.ReadFile("../../tools/stats/testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := compressionTable.ReplaceAllString(out, "\n"); got != string(want) {
		t.Errorf("kspider stats differs from tools/stats/testdata/golden.txt:\n%s", got)
	}
}

func TestStatsJSONMatchesGolden(t *testing.T) {
	dirs, args := buildTestStore(t, 2, "zstd")
	code, out, errOut := runCmd(t, "", append([]string{"stats", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stats --json is not JSON: %v\n%s", err, out)
	}
	golden, err := os.ReadFile("../../tools/stats/testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(golden, &want); err != nil {
		t.Fatal(err)
	}
	var report stats.Report
	json.Unmarshal([]byte(out), &report)
	c := report.Compression
	seg := segmentFileBytes(t, dirs)
	if c == nil || c.StoredBytes != seg || c.RawBytes != report.Summary.BytesStored || c.Ratio <= 0 {
		t.Errorf("compression %+v (segments hold %d bytes)", c, seg)
	}
	delete(got, "compression")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kspider stats --json differs from tools/stats/testdata/golden.json:\n%s", out)
	}
}

func TestStatsHTML(t *testing.T) {
	_, args := buildTestStore(t, 1, "s2")
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	code, out, errOut := runCmd(t, "", append([]string{"stats", "--html", file}, args...)...)
	if code != 0 || !strings.Contains(out, "wrote "+file+" (12 pages)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	html, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<svg", "Links between domain suffixes", "ku.ac.th", "Compression"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left beside the report: %v", entries)
	}
}

func TestStatsCountsCorruptRecord(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	storetest.Corrupt(t, dirs, "http://www.mit.edu/report.pdf")
	// Damage is exit status 1 (the report still covers the intact pages),
	// unless --allow-damage.
	for _, allow := range []bool{false, true} {
		cmd := []string{"stats", "--json"}
		if allow {
			cmd = append(cmd, "--allow-damage")
		}
		code, out, errOut := runCmd(t, "", append(cmd, args...)...)
		if want := map[bool]int{false: 1, true: 0}[allow]; code != want {
			t.Fatalf("allow-damage %v: exit %d, want %d: %s", allow, code, want, errOut)
		}
		var r stats.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Problems.BadRecords != 1 || r.Summary.URLs != 11 {
			t.Errorf("bad records %d, URLs %d; want 1 and 11", r.Problems.BadRecords, r.Summary.URLs)
		}
		if !strings.Contains(errOut, "kspider stats: damage:") || !strings.Contains(errOut, ".seg at offset") ||
			!strings.Contains(errOut, "1 pages known lost") {
			t.Errorf("the damaged record is not reported with its file and offset: %q", errOut)
		}
	}
}

// A segment cut short loses every page after the cut, but the report's
// Problems said 'records the store skipped 1' (a damaged region) and
// nothing of the 8 pages lost, said on stderr only; now the report counts
// them, as lost_pages and 'pages known lost to damage'.
func TestStatsCountsPagesLostToDamage(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "none")
	segs, _ := filepath.Glob(filepath.Join(dirs[0], "*.seg"))
	fi, err := os.Stat(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segs[0], fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := runCmd(t, "", append([]string{"stats", "--json", "--allow-damage"}, args...)...)
	var r struct {
		Summary  struct{ URLs int64 }
		Problems map[string]int64
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	lost := int64(len(storetest.Pages())) - r.Summary.URLs
	if lost < 2 || r.Problems["lost_pages"] != lost || !strings.Contains(errOut, fmt.Sprintf("%d pages known lost", lost)) {
		t.Errorf("problems %v with %d of %d pages reported; want lost_pages %d\n%s", r.Problems, r.Summary.URLs, len(storetest.Pages()), lost, errOut)
	}
	_, out, _ = runCmd(t, "", append([]string{"stats", "--allow-damage"}, args...)...)
	if !regexp.MustCompile(fmt.Sprintf(`\n  pages known lost to damage +%d\n`, lost)).MatchString(out) {
		t.Errorf("the text report does not count the %d pages lost:\n%s", lost, out)
	}
}

// segmentFileBytes is the size of the segment files in dirs.
func segmentFileBytes(t *testing.T, dirs []string) int64 {
	var n int64
	for _, dir := range dirs {
		segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
		for _, s := range segs {
			fi, err := os.Lstat(s)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().IsRegular() {
				n += fi.Size()
			}
		}
	}
	return n
}

// kspider stats summed the size of every name ending in .seg itself,
// where the store reads regular segment files only: a link looping to
// itself named 00000009.seg (which export and get read past) failed stats,
// 'stat DIR/00000009.seg: too many levels of symbolic links', exit 1, and
// a directory so named was counted in the stored bytes. Now stats counts
// the segments the store reads (and the store reports both names as
// damage, exit 1).
func TestStatsCountsTheSegmentsTheStoreReads(t *testing.T) {
	dirs, args := buildTestStore(t, 1, "lzo")
	want := segmentFileBytes(t, dirs)
	if err := os.Symlink("00000009.seg", filepath.Join(dirs[0], "00000009.seg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dirs[0], "00000008.seg"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", append([]string{"stats", "--json"}, args...)...)
	var report stats.Report
	if err := json.Unmarshal([]byte(out), &report); code != 1 || err != nil || report.Compression == nil || report.Compression.StoredBytes != want ||
		!strings.Contains(errOut, "00000008.seg is a directory") || !strings.Contains(errOut, "00000009.seg is a symbolic link") {
		t.Fatalf("exit %d, %v, compression %+v; want exit 1, both names reported, and %d stored bytes\n%s", code, err, report.Compression, want, errOut)
	}
}

func TestStatsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"stats"}, 2, "--data DIR is required"},
		{[]string{"stats", "--data", dir, "--json", "--html", "x.html"}, 2, "exclude each other"},
		{[]string{"stats", "--data", dir, "extra"}, 2, "unexpected argument"},
		{[]string{"stats", "--data", dir, "--data", dir}, 2, "given twice"},
		{[]string{"stats", "--data", dir, "--top", "0"}, 2, "--top"},
		{[]string{"stats", "--data", filepath.Join(dir, "missing")}, 1, "missing"},
		// A directory without a store is an error naming what is missing.
		{[]string{"stats", "--data", dir}, 1, "no page store: no segment files"},
	} {
		code, _, errOut := runCmd(t, "", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
