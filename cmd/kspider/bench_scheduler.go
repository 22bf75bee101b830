package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/tools/dataset"
	"github.com/kspider/kspider/urltree"
)

// schedulerBench is the result of `kspider bench scheduler`; the JSON
// field names are part of the contract.
type schedulerBench struct {
	URLs             int     `json:"urls"`
	BadHost          int     `json:"bad_host_urls"` // skipped: no usable host name
	Hosts            int     `json:"hosts"`
	Phases           int     `json:"phases"`
	AddNs            float64 `json:"add_ns"`
	AddCPUNs         float64 `json:"add_cpu_ns"`
	URLsPerS         float64 `json:"urls_per_s"`
	URLsPerCPUS      float64 `json:"urls_per_cpu_s"`
	Lists            uint64  `json:"lists"`
	MeanList         float64 `json:"mean_list"`
	StateBytesPerURL float64 `json:"state_bytes_per_url"`
	HostBytes        float64 `json:"host_bytes"`
	HostFileBytes    float64 `json:"host_file_bytes"`
	HostHeapBytes    float64 `json:"host_heap_bytes"`
	OpenMs           float64 `json:"open_ms"`
	OpenCPUMs        float64 `json:"open_cpu_ms"`
	PeakRSSMB        float64 `json:"peak_rss_mb"`
}

// benchClock is a phase source that never is in a guard interval; the
// benchmark moves the active phase on when nothing is left in it.
type benchClock struct {
	active int
	slot   int64
}

func (c *benchClock) Phase() scheduler.Phase {
	now := time.Now()
	return scheduler.Phase{Now: now, Slot: c.slot, Active: c.active, Start: now.Add(-time.Hour), End: now.Add(time.Hour),
		Left: time.Hour, Safe: true, MayStart: true}
}

// hostOf is the host of an absolute URL, without user info and port.
func hostOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "/?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.LastIndexByte(u, '@'); i >= 0 {
		u = u[i+1:]
	}
	if i := strings.LastIndexByte(u, ':'); i >= 0 && !strings.HasSuffix(u, "]") {
		u = u[:i]
	}
	return u
}

func benchScheduler(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench scheduler", "bench scheduler --urls FILE [--phases P] [--limit N] [--dir DIR] [--json]",
		`Benchmarks the scheduler: adds every URL of the list (plain or .zst) to a
URL tree for its id and then, timed, to the scheduler with its host and
depth 0; then takes and completes every list as fast as it can, one
goroutine, with the clock never in a guard interval and no politeness
delay, moving to the next phase when the active one has nothing left;
then closes and times a reopen of the full state.`)
	urlsPath := fs.String("urls", "", "URL list, one per line (plain or .zst)")
	phases := fs.Int("phases", 1, "number of phases P")
	limit := fs.Int("limit", 0, "use only the first N lines (0: all)")
	dir := fs.String("dir", "", "directory for the tree and scheduler (default: a temporary one, removed afterwards)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed parts to this file")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	switch {
	case *urlsPath == "":
		return usagef("--urls is required")
	case fs.NArg() > 0:
		return usagef("unexpected arguments %q", fs.Args())
	case *limit < 0:
		return usagef("--limit must not be negative")
	case *phases < 1 || *phases > 1<<16:
		return usagef("--phases must be 1..65536")
	}
	base := *dir
	if base == "" {
		var err error
		if base, err = os.MkdirTemp("", "kspider-bench-scheduler-"); err != nil {
			return err
		}
		defer os.RemoveAll(base)
	} else if entries, err := os.ReadDir(base); err == nil && len(entries) > 0 {
		return fmt.Errorf("--dir %s is not empty; the benchmark needs a fresh one", base)
	}
	tr, err := urltree.Open(filepath.Join(base, "urltree"), nil)
	if err != nil {
		return err
	}
	defer tr.Close()
	type pending struct {
		id   uint32
		host string
	}
	var adds []pending
	if _, err := dataset.Lines(*urlsPath, *limit, func(line []byte) error {
		id, added, err := tr.Add(line)
		if err != nil {
			return fmt.Errorf("urltree Add(%q): %w", line, err)
		}
		if added {
			adds = append(adds, pending{id, hostOf(string(line))})
		}
		return ctx.Err()
	}); err != nil {
		return err
	}
	if len(adds) == 0 {
		return fmt.Errorf("%s: no URLs", *urlsPath)
	}
	r := schedulerBench{URLs: len(adds), Phases: *phases}
	n := float64(len(adds))

	clk := &benchClock{}
	cfg := scheduler.Config{Clock: clk, Phases: *phases}
	sdir := filepath.Join(base, "scheduler")
	s, err := scheduler.Open(sdir, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()

	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tm := startTimer()
	for _, a := range adds {
		if _, err := s.Add(a.id, a.host, 0); err != nil {
			if !errors.Is(err, scheduler.ErrBadHost) {
				return fmt.Errorf("scheduler Add(%d, %q): %w", a.id, a.host, err)
			}
			r.BadHost++
		}
	}
	r.AddNs, r.AddCPUNs = tm.perOp(n)
	n -= float64(r.BadHost)
	r.URLs -= r.BadHost
	r.Hosts = s.Hosts()

	handed := 0
	idle := 0
	ok := fetched
	tm = startTimer()
	for handed < r.URLs {
		l, got, _, err := s.TryNext()
		if err != nil {
			return err
		}
		if !got {
			// Nothing left in this phase: move on to the next.
			if idle++; idle > *phases+1 {
				return fmt.Errorf("no list in any of %d phases with %d of %d URLs handed out", *phases, handed, r.URLs)
			}
			clk.active = (clk.active + 1) % *phases
			clk.slot++
			continue
		}
		idle = 0
		for _, id := range l.IDs {
			if err := s.Report(id, ok); err != nil {
				return err
			}
		}
		handed += len(l.IDs)
		if handed&0xffff < len(l.IDs) && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	wall, cpu := tm.perOp(n)
	rate := func(ns float64) float64 {
		if ns <= 0 {
			return 0 // too fast to measure (CPU time has a coarse clock)
		}
		return 1e9 / ns
	}
	r.URLsPerS, r.URLsPerCPUS = rate(wall), rate(cpu)
	c := s.Counters()
	r.Lists = c.Lists
	r.MeanList = n / float64(c.Lists)
	if err := s.Close(); err != nil {
		return err
	}
	s = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tm = startTimer()
	if s, err = scheduler.Open(sdir, cfg); err != nil {
		return err
	}
	r.OpenMs, r.OpenCPUMs = tm.perOp(1e6)
	runtime.GC()
	runtime.ReadMemStats(&after)
	// With no window scanned yet, the heap holds the host tables only.
	r.HostHeapBytes = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(r.Hosts)
	size := func(name string) float64 {
		fi, err := os.Stat(filepath.Join(sdir, name))
		if err != nil {
			return 0
		}
		return float64(fi.Size())
	}
	r.StateBytesPerURL = size("sched.states") / n
	r.HostFileBytes = (size("sched.hosts") + size("sched.names")) / float64(r.Hosts)
	r.HostBytes = r.HostFileBytes + r.HostHeapBytes
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		r.PeakRSSMB = float64(ru.Maxrss) / 1024
	}

	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(r)
	}
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, format string, v ...any) {
		fmt.Fprintf(w, "%s\t"+format+"\t\n", append([]any{name}, v...)...)
	}
	row("URLs / hosts / phases", "%d / %d / %d", r.URLs, r.Hosts, r.Phases)
	row("URLs skipped (no usable host)", "%d", r.BadHost)
	row("add ns (CPU ns), scheduler only", "%.0f (%.0f)", r.AddNs, r.AddCPUNs)
	row("URLs handed out per s (per CPU s)", "%.0f (%.0f)", r.URLsPerS, r.URLsPerCPUS)
	row("lists / mean ids per list", "%d / %.2f", r.Lists, r.MeanList)
	row("state file bytes per URL", "%.2f", r.StateBytesPerURL)
	row("bytes per host (files + heap)", "%.0f (%.0f + %.0f)", r.HostBytes, r.HostFileBytes, r.HostHeapBytes)
	row("reopen ms (CPU ms)", "%.1f (%.1f)", r.OpenMs, r.OpenCPUMs)
	row("peak RSS MB", "%.0f", r.PeakRSSMB)
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = e.stdout.Write(b.Bytes())
	return err
}

var fetched = scheduler.Outcome{Kind: scheduler.Fetched, Status: 200}
