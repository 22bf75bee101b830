package links

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// The pages the node crawls in `kspider bench crawl`: the Debian docs that
// tools/testweb/nginx.sh serves, and the generated test web. Each corpus
// is read whole, except openjdk's 10,000 pages, of which every 16th is
// taken (the same ones every run: the walk is in lexical order).
var docCorpora = []struct {
	name, dir, urlPrefix string
	every                int
}{
	{"pgdocs", "/usr/share/doc/postgresql-doc-15/html", "http://pgdocs.ac.th/", 1},
	{"pydocs", "/usr/share/doc/python3.11/html", "http://pydocs.co.th/", 1},
	{"javadocs", "/usr/share/doc/openjdk-17-doc/api", "http://javadocs.com/", 16},
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadCorpus returns the pages of one corpus, nil if it is absent.
func loadCorpus(tb testing.TB, name string) []page {
	if name == "testweb" {
		return testWebPages(tb, 1000)
	}
	for _, c := range docCorpora {
		if c.name != name {
			continue
		}
		root, err := filepath.EvalSymlinks(c.dir)
		if err != nil {
			return nil
		}
		var files []string
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
				files = append(files, p)
			}
			return nil
		})
		sort.Strings(files)
		var pages []page
		for i := 0; i < len(files); i += c.every {
			data, err := os.ReadFile(files[i])
			if err != nil {
				tb.Fatal(err)
			}
			rel, _ := filepath.Rel(root, files[i])
			pages = append(pages, page{c.urlPrefix + filepath.ToSlash(rel), data})
		}
		return pages
	}
	tb.Fatalf("no corpus %q", name)
	return nil
}

// testWebPages returns up to n HTML pages of the plain test web that
// `kspider bench crawl` crawls (its default flags), as served on ports
// 8080 and 8443.
func testWebPages(tb testing.TB, n int) []page {
	w := testweb.Generate(testweb.Config{Hosts: 1000, Seed: 1, MaxPages: 400, Plain: true})
	tr := w.Truth(testweb.Ports{HTTP: 8080, HTTPS: 8443})
	var pages []page
	for _, d := range tr.Reachable(1<<20, 4*n) {
		if d.Kind != "page" || d.Status != 200 {
			continue
		}
		body, err := tr.Body(d.URL)
		if err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, page{d.URL, body})
		if len(pages) == n {
			break
		}
	}
	return pages
}

var corpusNames = []string{"pgdocs", "pydocs", "javadocs", "testweb"}

// BenchmarkRealPages: one op is one pass over a corpus (sub-benchmark),
// and the figures are per page: ns/page, cpu-ns/page (the process's user
// and system CPU time, garbage collection included, which a machine
// loaded by other processes disturbs less than the wall clock),
// allocs/page and B/page.
func BenchmarkRealPages(b *testing.B) {
	for _, name := range corpusNames {
		b.Run(name, func(b *testing.B) {
			pages := loadCorpus(b, name)
			if len(pages) == 0 {
				b.Skip(name + " not installed")
			}
			var total int64
			for _, p := range pages {
				total += int64(len(p.body))
			}
			b.SetBytes(total)
			var x Extractor
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				for _, p := range pages {
					if _, err := x.Extract(p.body, p.url, nil, Options{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			n := float64(b.N) * float64(len(pages))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/page")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/page")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/page")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/page")
		})
	}
}
