package robots

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/tools/testenv"
)

// corpusFile is one robots.txt of the shared corpus.
type corpusFile struct {
	index int
	name  string
	body  []byte
}

// eachCorpusFile streams the robots.txt corpus (tar in zstd) and calls fn for
// every file whose index keep accepts (nil: all), without unpacking to disk.
func eachCorpusFile(t testing.TB, keep func(i int) bool, fn func(corpusFile)) int {
	t.Helper()
	path := testenv.Data(t, dataset.RobotsCorpus)
	r, err := dataset.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := tar.NewReader(r)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(h.Name, "robots/") {
			continue
		}
		i := n
		n++
		if keep != nil && !keep(i) {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		fn(corpusFile{index: i, name: h.Name, body: body})
	}
	return n
}

// TestCorpusParse parses corpus files (every 25th; all with
// KSPIDER_ROBOTS_FULL=1), compiles rules for every agent each names, and
// reports parse time per file (best of three runs). Timings are logged,
// never asserted.
func TestCorpusParse(t *testing.T) {
	keep := func(i int) bool { return i%25 == 0 }
	if os.Getenv("KSPIDER_ROBOTS_FULL") == "1" {
		keep = nil
	}
	var (
		times            []time.Duration
		bytes, truncated int64
		ignored, lines   int
		groups, sitemaps int
		maxName          string
		checks           []time.Duration
		maxCheck         time.Duration
		maxCheckName     string
		maxTime          time.Duration
	)
	eachCorpusFile(t, keep, func(f corpusFile) {
		// The best of three runs: the machine is shared, and one run's
		// maximum is mostly somebody else's time slice.
		var file *File
		var r *Rules
		d := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			file = Parse(f.body)
			r = file.Rules("KSpider")
			d = min(d, time.Since(start))
		}
		times = append(times, d)
		if d > maxTime {
			maxTime, maxName = d, f.name
		}
		bytes += int64(len(f.body))
		if file.Truncated {
			truncated++
		}
		ignored += file.IgnoredLines
		lines += file.Lines
		groups += file.Groups()
		sitemaps += len(file.Sitemaps)
		// Check cost on this file's rules: 12 paths built from its rules,
		// 20 rounds, best of three.
		paths := samplePaths(newRand(uint64(f.index)), f.body, 12)
		cd := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			for range 20 {
				for _, p := range paths {
					r.Allowed(p)
				}
			}
			cd = min(cd, time.Since(start)/time.Duration(20*len(paths)))
		}
		checks = append(checks, cd)
		if cd > maxCheck {
			maxCheck, maxCheckName = cd, f.name
		}
		for _, a := range file.Agents() {
			if !file.Rules(a).Allowed("/robots.txt") {
				t.Errorf("%s: /robots.txt disallowed for %q", f.name, a)
			}
		}
	})
	if len(times) == 0 {
		t.Fatal("no files")
	}
	slices.Sort(times)
	var sum time.Duration
	for _, d := range times {
		sum += d
	}
	t.Logf("%d files, %.1f MB: parse+compile per file mean %v, p50 %v, p99 %v, max %v (%s); %.1f MB/s",
		len(times), float64(bytes)/1e6, sum/time.Duration(len(times)), times[len(times)/2],
		times[len(times)*99/100], maxTime, maxName, float64(bytes)/1e6/sum.Seconds())
	slices.Sort(checks)
	t.Logf("check per path on each file's rules: p50 %v, p90 %v, p99 %v, max %v (%s)",
		checks[len(checks)/2], checks[len(checks)*9/10], checks[len(checks)*99/100], maxCheck, maxCheckName)
	t.Logf("%d lines, %d ignored, %d groups, %d sitemaps, %d files over the %d KiB limit",
		lines, ignored, groups, sitemaps, truncated, DefaultMaxSize>>10)
}
