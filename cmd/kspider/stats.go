package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
)

// runStats reports statistics over a store's pages, offline.
func runStats(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "stats", "stats --data DIR [--data DIR...] [--json | --html FILE] [--top N]",
		`Reports statistics over the pages of a store, offline (no network): the
thesis's result tables (summary, HTTP status, Server software, servers,
machines and documents by domain suffix, top domains, outgoing links per page,
file extensions, the link matrix between domain suffixes) and content types,
charsets, page sizes, fetch times and the compression ratio. All data
directories are scanned in parallel. Text tables by default.

Damage met in the store (records failing their checksums, a damaged index,
truncated segments) is skipped and reported on stderr with file and offset;
the report covers the intact pages and the exit status is 1 unless
--allow-damage is given.`)
	var dirs dataDirsFlag
	fs.Var(&dirs, "data", "a store `DIR`ectory, or a node's data directory (its store is DIR/pages); repeat for each disk")
	asJSON := fs.Bool("json", false, "print JSON instead of text tables")
	htmlFile := fs.String("html", "", "write a self-contained HTML report with charts to `FILE`")
	top := fs.Int("top", 20, "rows per table before \"(other)\" (-1: all)")
	allowDamage := allowDamageFlag(fs)
	if err := parseDataFlags(e, fs, args); err != nil {
		return err
	}
	switch {
	case *asJSON && *htmlFile != "":
		return usagef("--json and --html exclude each other")
	case *top == 0 || *top < -1:
		return usagef("--top must be positive or -1")
	}

	given := dirs
	dirs, err := storeDirs(dirs)
	if err != nil {
		return err
	}
	var html *atomicFile
	if *htmlFile != "" {
		if err := checkOutsideStores(*htmlFile, given, dirs); err != nil {
			return err
		}
		if html, err = createAtomic(*htmlFile); err != nil {
			return err
		}
		defer html.abort()
	}
	r, err := openStore(ctx, e.stderr, "stats", dirs)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := checkStoreTree(e.stderr, "stats", given, r); err != nil {
		return err
	}
	// The segments the reader reads, as it found them: a stray name
	// like one (a link, a FIFO, a directory), which the store ignores,
	// neither counted nor, when it cannot be looked at, failing stats.
	_, stored := r.Progress()
	c := stats.New(stats.Options{Limit: *top, NewLinkFunc: stats.CrawlerLinks, StoredBytes: stored})
	stopProgress := startScanProgress(e.stderr, stats.IsTerminal(e.stderr), c, r)
	err = c.AddAll(ctx, r, 0)
	stopProgress()
	pages, _ := c.Progress()
	switch {
	case interrupted(ctx, err) && html != nil:
		return fmt.Errorf("interrupted after %d pages: %s not written (a file of that name before is left as it was)", pages, *htmlFile)
	case interrupted(ctx, err):
		return fmt.Errorf("interrupted after %d pages: no report", pages)
	case err != nil:
		return fmt.Errorf("scanning %s: %w", strings.Join(dirs, ", "), err)
	}
	scan := r.Stats()
	c.AddDamage(scan.Skipped, scan.Lost)
	report := c.Report()

	switch {
	case *asJSON:
		err = report.WriteJSON(e.stdout)
	case html != nil:
		if err = report.WriteHTML(html, "kspider statistics: "+strings.Join(dirs, ", ")); err == nil {
			err = html.commit()
		}
		if err == nil {
			fmt.Fprintf(e.stdout, "wrote %s (%d pages)\n", *htmlFile, report.Summary.URLs)
		}
	default:
		err = report.WriteText(e.stdout)
	}
	if derr := reportDamage(e.stderr, "stats", scan, *allowDamage); err == nil {
		err = derr
	}
	return err
}

// startScanProgress draws the progress of a scan of r, whose pages counts
// counts, on w: redrawn in place on a terminal (terminal set), else a line
// every 10 s (a log of a scan of hours shows it going on, one of seconds
// stays clean). Lines written to w meanwhile must go through a lock.
func startScanProgress(w io.Writer, terminal bool, counts stats.PageCounts, r *storage.Reader) (stop func()) {
	return stats.StartProgress(w, counts, r, progressEvery(terminal), terminal).Stop
}

// progressEvery is how often an offline command's progress line is
// drawn: redrawn in place on a terminal, a line of its own every 10 s in
// a log or a pipe.
func progressEvery(terminal bool) time.Duration {
	if terminal {
		return 250 * time.Millisecond
	}
	return 10 * time.Second
}

// interrupted reports whether err is ctx's end (Ctrl-C), which the offline
// tools say as such, not as the "context canceled" of a failure.
func interrupted(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// parseDataFlags parses the flags of a command over data directories that
// takes no arguments: --data is required.
func parseDataFlags(e env, fs *flag.FlagSet, args []string) error {
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case fs.Lookup("data").Value.String() == "":
		return usagef("--data DIR is required")
	}
	return nil
}

// allowDamageFlag defines --allow-damage, which reportDamage obeys.
func allowDamageFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("allow-damage", false, "exit 0 even if the store is damaged (the damage is still reported)")
}

// reportDamage prints to w what damage the reader met - each problem with
// its file and offset, then a summary - and returns an error saying the
// store is damaged unless allow is set (--allow-damage). Notes that are not
// damage (an old index format read from the segments) are printed too.
func reportDamage(w io.Writer, cmd string, s storage.ScanStats, allow bool) error {
	summary := printDamage(w, cmd, s)
	switch {
	case summary == "":
		return nil
	case allow:
		fmt.Fprintf(w, "kspider %s: %s (allowed by --allow-damage)\n", cmd, summary)
		return nil
	}
	return fmt.Errorf("%s; run 'kspider check --data DIR' for details, --allow-damage to accept", summary)
}

// reportDamageOnFailure is reportDamage for a command failing anyway: the
// damage may be why, so it is printed, but not as allowed.
func reportDamageOnFailure(w io.Writer, cmd string, s storage.ScanStats) {
	if summary := printDamage(w, cmd, s); summary != "" {
		fmt.Fprintf(w, "kspider %s: %s\n", cmd, summary)
	}
}

// printDamage prints the notes and problems of s and returns the summary
// of its damage, "" if none.
func printDamage(w io.Writer, cmd string, s storage.ScanStats) (summary string) {
	for _, n := range s.Notes {
		fmt.Fprintf(w, "kspider %s: note: %s\n", cmd, n)
	}
	if !s.Damaged() {
		return ""
	}
	for _, err := range s.Errors {
		fmt.Fprintf(w, "kspider %s: damage: %v\n", cmd, err)
	}
	if more := s.Damage - int64(len(s.Errors)); more > 0 {
		fmt.Fprintf(w, "kspider %s: %d more damage reports not shown\n", cmd, more)
	}
	return fmt.Sprintf("store damaged: %d problems, %d damaged regions (%d bytes) skipped, %d pages known lost",
		s.Damage, s.Skipped, s.SkippedBytes, s.Lost)
}
