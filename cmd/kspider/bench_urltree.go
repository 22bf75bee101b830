package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/urltree"
)

// urltreeBench is the result of `kspider bench urltree`; the JSON field
// names are part of the contract.
type urltreeBench struct {
	URLs            int     `json:"urls"`
	Lines           int     `json:"lines"`
	Blank           int     `json:"blank_lines"`
	Duplicates      int     `json:"duplicate_lines"`
	RawBytesPerURL  float64 `json:"raw_bytes_per_url"`
	BytesPerURL     float64 `json:"bytes_per_url"`
	FileBytesPerURL float64 `json:"file_bytes_per_url"`
	Ratio           float64 `json:"ratio"`
	AddNs           float64 `json:"add_ns"`
	FindNs          float64 `json:"find_ns"`
	GetNs           float64 `json:"get_ns"`
	HeapBytesPerURL float64 `json:"heap_bytes_per_url"`
	MapAddNs        float64 `json:"map_add_ns"`
	MapFindNs       float64 `json:"map_find_ns"`
	FindVsMap       float64 `json:"find_vs_map"`
	MemoryVsMap     float64 `json:"memory_vs_map"`
	NodeBytes       float64 `json:"node_bytes_per_url"`
	PointerBytes    float64 `json:"pointer_bytes_per_url"`
	EntryHeaders    float64 `json:"entry_header_bytes_per_url"`
	TailBytes       float64 `json:"tail_bytes_per_url"`
	ChecksumBytes   float64 `json:"checksum_bytes_per_url"`
	MeanDepth       float64 `json:"mean_depth"`
	MeanChain       float64 `json:"mean_get_chain"`
	// CPU time of the timing thread per operation: on a loaded machine
	// this is steadier than wall time, which counts time spent descheduled.
	AddCPUNs     float64 `json:"add_cpu_ns"`
	FindCPUNs    float64 `json:"find_cpu_ns"`
	GetCPUNs     float64 `json:"get_cpu_ns"`
	MapFindCPUNs float64 `json:"map_find_cpu_ns"`
	// Open after a clean Close, and after a crash (the node file is
	// rebuilt from the entries), in milliseconds.
	OpenCleanMs float64 `json:"open_clean_ms"`
	OpenCrashMs float64 `json:"open_crash_ms"`
}

// opTimer measures wall and thread CPU time of a loop; the caller has
// locked its goroutine to the thread.
type opTimer struct {
	wall time.Time
	cpu  time.Duration
}

func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startTimer() opTimer { return opTimer{time.Now(), threadCPU()} }

// perOp returns the wall and CPU nanoseconds per operation.
func (t opTimer) perOp(n float64) (wall, cpu float64) {
	return float64(time.Since(t.wall).Nanoseconds()) / n, float64((threadCPU() - t.cpu).Nanoseconds()) / n
}

func benchURLTree(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench urltree", "bench urltree --urls FILE [--limit N] [--dir DIR] [--json]",
		`Benchmarks the URL tree against a Go map: loads the URL list (plain or
.zst; blank and duplicate lines are counted and skipped), adds every URL to a
fresh tree, syncs, then times Find and Get on every URL in random order and
checks every result (exit 1 on any mismatch). A map[string]uint32 baseline
is measured on the same URLs in the same run.`)
	urlsPath := fs.String("urls", "", "URL list, one per line (plain or .zst)")
	limit := fs.Int("limit", 0, "use only the first N URLs (0: all)")
	dir := fs.String("dir", "", "directory for the tree (default: a temporary one, removed afterwards)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if *urlsPath == "" {
		return usagef("--urls is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if *limit < 0 {
		return usagef("--limit must not be negative")
	}

	var r urltreeBench
	var urls []string
	seen := make(map[string]struct{})
	st, err := dataset.Lines(*urlsPath, *limit, func(line []byte) error {
		if _, dup := seen[string(line)]; dup {
			r.Duplicates++
			return nil
		}
		u := string(line)
		seen[u] = struct{}{}
		urls = append(urls, u)
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	seen = nil
	r.Lines, r.Blank, r.URLs = st.Lines, st.Blank, len(urls)
	if len(urls) == 0 {
		return fmt.Errorf("%s: no URLs", *urlsPath)
	}
	n := float64(len(urls))
	raw := 0
	for _, u := range urls {
		raw += len(u)
	}
	r.RawBytesPerURL = float64(raw) / n

	treeDir := *dir
	if treeDir == "" {
		if treeDir, err = os.MkdirTemp("", "kspider-bench-urltree-"); err != nil {
			return err
		}
		defer os.RemoveAll(treeDir)
	} else if entries, err := os.ReadDir(treeDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("--dir %s is not empty; the benchmark needs a fresh tree", treeDir)
	}
	tr, err := urltree.Open(treeDir, nil)
	if err != nil {
		return err
	}
	defer tr.Close()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tm := startTimer()
	for i, u := range urls {
		id, added, err := tr.AddString(u)
		if err != nil {
			return fmt.Errorf("Add(%q): %w", u, err)
		}
		if !added || id != uint32(i) {
			return fmt.Errorf("Add(%q) = %d, %v; want %d, true", u, id, added, i)
		}
		if i%65536 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	r.AddNs, r.AddCPUNs = tm.perOp(n)
	if err := tr.Sync(); err != nil {
		return err
	}

	order := rand.New(rand.NewPCG(1, 2)).Perm(len(urls))
	tm = startTimer()
	for _, i := range order {
		id, ok := tr.FindString(urls[i])
		if !ok || id != uint32(i) {
			return fmt.Errorf("Find(%q) = %d, %v; want %d, true", urls[i], id, ok, i)
		}
	}
	r.FindNs, r.FindCPUNs = tm.perOp(n)
	if err := ctx.Err(); err != nil {
		return err
	}
	// Get is timed alone and every result checked in a second pass: the
	// check reads the expected string, a cache miss that is no part of
	// Get. (Find needs the query string anyway, as the map does.)
	buf := make([]byte, 0, 1<<16)
	total := 0
	tm = startTimer()
	for _, i := range order {
		if buf, err = tr.Get(uint32(i), buf[:0]); err != nil {
			return fmt.Errorf("Get(%d): %w", i, err)
		}
		total += len(buf)
	}
	r.GetNs, r.GetCPUNs = tm.perOp(n)
	if total != raw {
		return fmt.Errorf("Get returned %d bytes in all, want %d", total, raw)
	}
	for _, i := range order {
		buf, err = tr.Get(uint32(i), buf[:0])
		if err != nil || string(buf) != urls[i] {
			return fmt.Errorf("Get(%d) = %q, %v; want %q", i, buf, err, urls[i])
		}
	}

	s := tr.Stats()
	r.BytesPerURL = float64(s.InUse()) / n
	r.FileBytesPerURL = float64(s.FileBytes) / n
	r.Ratio = r.BytesPerURL / r.RawBytesPerURL
	r.NodeBytes = float64(s.NodeBytes) / n
	r.PointerBytes = float64(s.PointerBytes) / n
	r.EntryHeaders = float64(s.EntryHeaders) / n
	r.TailBytes = float64(s.TailBytes) / n
	r.ChecksumBytes = float64(s.Checksums) / n
	r.MeanDepth = s.MeanDepth
	r.MeanChain = s.MeanChain
	if err := tr.Close(); err != nil {
		return err
	}
	if r.OpenCleanMs, r.OpenCrashMs, err = openTimes(treeDir); err != nil {
		return err
	}

	if err := mapBaseline(urls, order, &r); err != nil {
		return err
	}
	r.FindVsMap = r.FindNs / r.MapFindNs
	r.MemoryVsMap = r.BytesPerURL / r.HeapBytesPerURL

	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		return enc.Encode(r)
	}
	return printURLTreeBench(e, r)
}

// openTimes times Open after a clean Close and after a crash. The crash
// is a copy of the files of a tree opened for writing (a second writer
// would get urltree.ErrLocked), which holds them as kill -9 would leave
// them.
func openTimes(dir string) (clean, crash float64, err error) {
	start := time.Now()
	tr, err := urltree.Open(dir, nil)
	if err != nil {
		return 0, 0, err
	}
	clean = float64(time.Since(start).Microseconds()) / 1000
	if tr.Recovered() {
		tr.Close()
		return 0, 0, fmt.Errorf("open after a clean close rebuilt the node file")
	}
	crashDir := dir + ".crash"
	defer os.RemoveAll(crashDir)
	err = copyDir(dir, crashDir)
	if cerr := tr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, err
	}
	start = time.Now()
	tr2, err := urltree.Open(crashDir, nil)
	if err != nil {
		return 0, 0, err
	}
	crash = float64(time.Since(start).Microseconds()) / 1000
	if !tr2.Recovered() {
		tr2.Close()
		return 0, 0, fmt.Errorf("open after a crash did not rebuild the node file")
	}
	return clean, crash, tr2.Close()
}

// copyDir copies the regular files of dir into a new directory to.
func copyDir(dir, to string) error {
	if err := os.Mkdir(to, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// mapBaseline measures a map[string]uint32 that owns copies of its keys,
// as a tree owns its bytes.
func mapBaseline(urls []string, order []int, r *urltreeBench) error {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := float64(len(urls))
	m := make(map[string]uint32)
	tm := startTimer()
	for i, u := range urls {
		m[strings.Clone(u)] = uint32(i)
	}
	r.MapAddNs, _ = tm.perOp(n)
	tm = startTimer()
	for _, i := range order {
		if id, ok := m[urls[i]]; !ok || id != uint32(i) {
			return fmt.Errorf("map baseline lost %q", urls[i])
		}
	}
	r.MapFindNs, r.MapFindCPUNs = tm.perOp(n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	r.HeapBytesPerURL = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	// Both must outlive the second reading, or freeing them would
	// cancel out what the map holds.
	runtime.KeepAlive(m)
	runtime.KeepAlive(urls)
	return nil
}

func printURLTreeBench(e env, r urltreeBench) error {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, format string, v ...any) {
		fmt.Fprintf(w, "%s\t"+format+"\t\n", append([]any{name}, v...)...)
	}
	row("URLs", "%d", r.URLs)
	row("lines read / blank / duplicate", "%d / %d / %d", r.Lines, r.Blank, r.Duplicates)
	row("raw bytes per URL", "%.2f", r.RawBytesPerURL)
	row("tree bytes per URL", "%.2f", r.BytesPerURL)
	row("  tree nodes", "%.2f", r.NodeBytes)
	row("  data pointers", "%.2f", r.PointerBytes)
	row("  entry headers", "%.2f", r.EntryHeaders)
	row("  tail bytes", "%.2f", r.TailBytes)
	row("  checksums", "%.2f", r.ChecksumBytes)
	row("file bytes per URL", "%.2f", r.FileBytesPerURL)
	row("ratio (tree / raw)", "%.3f", r.Ratio)
	row("mean tree depth", "%.2f", r.MeanDepth)
	row("mean Get reference chain", "%.2f", r.MeanChain)
	row("Add ns (CPU ns)", "%.0f (%.0f)", r.AddNs, r.AddCPUNs)
	row("Find ns (CPU ns)", "%.0f (%.0f)", r.FindNs, r.FindCPUNs)
	row("Get ns (CPU ns)", "%.0f (%.0f)", r.GetNs, r.GetCPUNs)
	row("Open ms, clean / after a crash", "%.0f / %.0f", r.OpenCleanMs, r.OpenCrashMs)
	row("map heap bytes per URL", "%.2f", r.HeapBytesPerURL)
	row("map add ns", "%.0f", r.MapAddNs)
	row("map find ns (CPU ns)", "%.0f (%.0f)", r.MapFindNs, r.MapFindCPUNs)
	row("Find / map find", "%.2f", r.FindVsMap)
	row("tree / map memory", "%.3f", r.MemoryVsMap)
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := e.stdout.Write(b.Bytes())
	return err
}
