package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/storage"
	lzo "github.com/rasky/go-lzo"
)

// storageBenchResult is one codec's line of `kspider bench storage`.
type storageBenchResult struct {
	Codec    string  `json:"codec"`
	Pages    int     `json:"pages"`
	RawMB    float64 `json:"raw_mb"`
	StoredMB float64 `json:"stored_mb"`
	Ratio    float64 `json:"ratio"`
	WriteMBs float64 `json:"write_mb_s"`
	ReadMBs  float64 `json:"read_mb_s"`
	// WriteVsBaseline is write_mb_s over the go-lzo baseline measured
	// just before and after this codec's run: how the whole pipeline
	// compares with one goroutine of plain go-lzo, a ratio that survives a
	// busy machine better than MB/s.
	WriteVsBaseline float64 `json:"write_vs_baseline"`
}

type storageBenchReport struct {
	HTMLDir     string  `json:"html_dir"`
	Files       int     `json:"files"`
	FilesMB     float64 `json:"files_mb"`
	Repeat      int     `json:"repeat"`
	Disks       int     `json:"disks"`
	Compressors int     `json:"compressors"`
	SyncPolicy  string  `json:"sync_policy"`
	// BaselineMBs is github.com/rasky/go-lzo's Compress1X over the same
	// files, one goroutine, no I/O: the thesis's compressor on its own
	// (the mean of the measurements around each codec's run).
	BaselineMBs float64              `json:"baseline_golzo_mb_s"`
	Codecs      []storageBenchResult `json:"codecs"`
}

func benchStorage(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench storage", "bench storage --html DIR [--disks N] [--codec LIST] [--min-mb N] [--json]", `
Stores every HTML file under DIR through the full storage pipeline (incoming
pool, compressors, one saver per directory) into N fresh temporary data
directories, then scans everything back and checks it byte for byte. The
files are stored repeatedly, under new URL ids, until at least --min-mb raw
megabytes go through, so a small DIR still gives a meaningful figure.

Prints per codec: pages, raw_mb, stored_mb, ratio, write_mb_s (raw MB per
second through the whole pipeline, Put of the first page to Close) and
read_mb_s (raw MB per second of a Scan with decompression and check). The
store uses its default sync policy. All N directories live under $TMPDIR, so
on one machine they share one disk.`)
	htmlDir := fs.String("html", "", "directory of HTML files (searched recursively)")
	disks := fs.Int("disks", 1, "number of data directories (savers)")
	codecList := fs.String("codec", "lzo,s2,zstd,none", "comma-separated codecs to measure")
	minMB := fs.Float64("min-mb", 200, "repeat the files until this many raw MB are stored")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *htmlDir == "" {
		return usagef("--html DIR is required")
	}
	if *disks < 1 || *disks > 64 {
		return usagef("--disks must be between 1 and 64")
	}
	var codecs []string
	for _, c := range strings.Split(*codecList, ",") {
		if _, err := storage.ParseCodec(c); err != nil {
			return usagef("%v", err)
		}
		codecs = append(codecs, c)
	}
	files, err := readHTMLFiles(*htmlDir)
	if err != nil {
		return err
	}
	total := 0
	for _, f := range files {
		total += len(f)
	}
	if total == 0 {
		return fmt.Errorf("no HTML files (*.html, *.htm) under %s", *htmlDir)
	}
	repeat := max(1, int((*minMB*1e6+float64(total)-1)/float64(total)))
	rep := storageBenchReport{
		HTMLDir: *htmlDir, Files: len(files), FilesMB: float64(total) / 1e6, Repeat: repeat,
		Disks: *disks, Compressors: runtime.GOMAXPROCS(0),
		SyncPolicy: "default: fdatasync every 1024 records or 100ms per saver",
	}
	pages := benchPages(files, repeat)
	// The baseline is measured before and after each codec and averaged,
	// so that it sees the same load on a shared machine as the pipeline.
	var baselines []float64
	for _, c := range codecs {
		before := goLZOBaseline(files, *minMB)
		res, err := benchStorageCodec(ctx, c, *disks, pages, files)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		base := (before + goLZOBaseline(files, *minMB)) / 2
		baselines = append(baselines, base)
		res.WriteVsBaseline = res.WriteMBs / base
		rep.Codecs = append(rep.Codecs, res)
	}
	for _, b := range baselines {
		rep.BaselineMBs += b / float64(len(baselines))
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(e.stdout, "%d HTML files (%.1f MB) from %s, stored %d times; %d disk(s), %d compressors; sync policy %s\n",
		rep.Files, rep.FilesMB, rep.HTMLDir, rep.Repeat, rep.Disks, rep.Compressors, rep.SyncPolicy)
	fmt.Fprintf(e.stdout, "baseline: go-lzo Compress1X alone, one goroutine, around each run: %.1f MB/s on average\n\n", rep.BaselineMBs)
	fmt.Fprintf(e.stdout, "%-6s %8s %9s %10s %6s %11s %10s %12s\n", "codec", "pages", "raw_mb", "stored_mb", "ratio", "write_mb_s", "read_mb_s", "vs_baseline")
	for _, r := range rep.Codecs {
		fmt.Fprintf(e.stdout, "%-6s %8d %9.1f %10.1f %6.2f %11.1f %10.1f %11.2fx\n", r.Codec, r.Pages, r.RawMB, r.StoredMB, r.Ratio, r.WriteMBs, r.ReadMBs, r.WriteVsBaseline)
	}
	return nil
}

// goLZOBaseline compresses the files with go-lzo, one goroutine, until a
// twentieth of minMB (at least one pass) has gone through, and returns MB/s.
func goLZOBaseline(files [][]byte, minMB float64) float64 {
	var n int64
	start := time.Now()
	for n == 0 || float64(n) < minMB*1e6/20 {
		for _, f := range files {
			lzo.Compress1X(f)
			n += int64(len(f))
		}
	}
	return float64(n) / 1e6 / time.Since(start).Seconds()
}

// readHTMLFiles loads every *.html and *.htm file under dir, in walk order.
func readHTMLFiles(dir string) ([][]byte, error) {
	var files [][]byte
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := strings.ToLower(d.Name())
		if d.Type().IsRegular() && (strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".htm")) {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files = append(files, b)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w", err)
	}
	return files, nil
}

// benchPages makes repeat×len(files) pages; page id i carries file
// i%len(files). Bodies are shared, not copied: Put does not modify them.
func benchPages(files [][]byte, repeat int) []*storage.Page {
	pages := make([]*storage.Page, 0, repeat*len(files))
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	for i := 0; i < repeat*len(files); i++ {
		pages = append(pages, &storage.Page{
			URLID:     uint64(i),
			URL:       fmt.Sprintf("http://docs%d.example/html/page%d.html", i%7, i),
			FetchTime: t0.Add(time.Duration(i) * time.Millisecond),
			Duration:  time.Duration(i%900) * time.Millisecond,
			Status:    200,
			Header:    []byte("Content-Type: text/html; charset=utf-8\r\nServer: nginx\r\n"),
			ServerIP:  netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}),
			Body:      files[i%len(files)],
		})
	}
	return pages
}

func benchStorageCodec(ctx context.Context, codec string, disks int, pages []*storage.Page, files [][]byte) (storageBenchResult, error) {
	res := storageBenchResult{Codec: codec, Pages: len(pages)}
	root, err := os.MkdirTemp("", "kspider-bench-storage-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(root)
	dirs := make([]string, disks)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("disk%d", i))
	}
	var raw int64
	for _, p := range pages {
		raw += int64(len(p.Body))
	}
	res.RawMB = float64(raw) / 1e6

	start := time.Now()
	s, err := storage.Open(storage.Config{Dirs: dirs, Codec: codec})
	if err != nil {
		return res, err
	}
	for _, p := range pages {
		if err := s.Put(ctx, p); err != nil {
			s.Close()
			return res, err
		}
	}
	if err := s.Close(); err != nil {
		return res, err
	}
	res.WriteMBs = res.RawMB / time.Since(start).Seconds()
	if d := s.Durable(); d != uint64(len(pages)) {
		return res, fmt.Errorf("%d pages durable after Close, want %d", d, len(pages))
	}

	var stored int64
	for _, d := range dirs {
		segs, _ := filepath.Glob(filepath.Join(d, "*.seg"))
		for _, f := range segs {
			if fi, err := os.Stat(f); err == nil {
				stored += fi.Size()
			}
		}
	}
	res.StoredMB = float64(stored) / 1e6
	res.Ratio = float64(raw) / float64(max(stored, 1))

	start = time.Now()
	r, err := storage.OpenReader(dirs)
	if err != nil {
		return res, err
	}
	defer r.Close()
	var n atomic.Int64
	err = r.Scan(ctx, func(p *storage.Page) error {
		if p.URLID >= uint64(len(pages)) || !bytes.Equal(p.Body, files[p.URLID%uint64(len(files))]) {
			return fmt.Errorf("page %d read back differs from what was stored", p.URLID)
		}
		n.Add(1)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.ReadMBs = res.RawMB / time.Since(start).Seconds()
	if int(n.Load()) != len(pages) {
		return res, fmt.Errorf("read back %d pages, stored %d (skipped %d damaged regions)", n.Load(), len(pages), r.Skipped())
	}
	return res, nil
}
