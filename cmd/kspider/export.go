package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
	"github.com/kspider/kspider/tools/warc"
)

// runExport exports stored pages; the format is the first argument.
func runExport(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "export", "export FORMAT [flags]",
		`Exports the pages of a store. Formats:

  warc   WARC/1.1 (ISO 28500), one gzip member per record
         (kspider export warc --help)`)
	if len(args) > 0 && args[0] == "warc" {
		return runExportWARC(ctx, e, args[1:])
	}
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("missing format (warc)")
	}
	return usagef("unknown format %q (formats: warc)", fs.Arg(0))
}

func runExportWARC(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "export warc", "export warc --data DIR [--data DIR...] --out FILE.warc.gz",
		`Writes every stored page as a WARC/1.1 file (ISO 28500), one gzip member per
record: a warcinfo record, then one response record per page (the latest
record of each URL id) with WARC-Target-URI, WARC-Date (the fetch time),
WARC-IP-Address, WARC-Payload-Digest and WARC-Block-Digest (sha1, base32) and
the HTTP status line, headers and body.

Bodies are stored decoded of transfer encoding, so Transfer-Encoding is written
as X-Crawler-Transfer-Encoding, a Content-Length that does not match the body
as X-Crawler-Content-Length, and a correct Content-Length is added.

Header lines that would break the HTTP block (no colon, control characters)
are left out, logged and counted in the last line. Pages that cannot be
written as WARC at all (a URL with spaces, a status that is not three
digits: only a damaged or foreign store holds such) are skipped and logged,
and, being missing from the file, make the exit status 1 unless
--allow-damage is given. The first 100 lines about single pages are logged,
the rest counted.

Damage met in the store (records failing their checksums, a damaged index,
truncated segments) is skipped and reported on stderr with file and offset;
the file still holds every intact page, and the exit status is 1 unless
--allow-damage is given.

The file is written under a temporary name and renamed when complete.`)
	var dirs dataDirsFlag
	fs.Var(&dirs, "data", "a store `DIR`ectory, or a node's data directory (its store is DIR/pages); repeat for each disk")
	out := fs.String("out", "", "the WARC `FILE` to write (conventionally .warc.gz)")
	allowDamage := allowDamageFlag(fs)
	if err := parseDataFlags(e, fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out FILE is required")
	}

	sdirs, err := storeDirs(dirs)
	if err != nil {
		return err
	}
	if err := checkOutsideStores(*out, dirs, sdirs); err != nil {
		return err
	}
	f, err := createAtomic(*out)
	if err != nil {
		return err
	}
	defer f.abort()
	r, err := openStore(ctx, e.stderr, "export", sdirs)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := checkStoreTree(e.stderr, "export", dirs, r); err != nil {
		return err
	}
	var n exportCounts
	err = func() error {
		w := warc.NewWriter(f)
		infoID, err := w.WriteInfo(filepath.Base(*out), time.Now(), []warc.Field{
			{Name: "software", Value: "kspider"},
			{Name: "format", Value: "WARC File Format 1.1"},
			{Name: "conformsTo", Value: "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"},
			{Name: "description", Value: "pages exported from the kspider store " + fieldText(strings.Join(dirs, ", "))},
		})
		if err != nil {
			return err
		}
		n, err = exportPages(ctx, e, r, w, infoID)
		if err != nil {
			return err
		}
		return w.Flush()
	}()
	if err == nil {
		err = f.commit()
	}
	scan := r.Stats()
	if err != nil {
		reportDamageOnFailure(e.stderr, "export", scan)
		if interrupted(ctx, err) {
			return fmt.Errorf("interrupted after %d pages: %s not written (a file of that name before is left as it was)", n.written, *out)
		}
		return err
	}
	// A damaged region may hold many pages (a segment cut short loses
	// all after the cut): the pages known lost are counted, not regions.
	fmt.Fprintf(e.stdout, "wrote %d pages to %s; not in it: %d pages known lost to damage (%d damaged regions, %d bytes, skipped) and %d unwritable pages",
		n.written, *out, scan.Lost, scan.Skipped, scan.SkippedBytes, n.refused)
	if n.droppedLines > 0 {
		fmt.Fprintf(e.stdout, "; %d malformed header lines of %d pages left out", n.droppedLines, n.droppedPages)
	}
	fmt.Fprintln(e.stdout)
	if n.notShown > 0 {
		fmt.Fprintf(e.stderr, "kspider export: %d more lines about single pages not shown (the first %d are above)\n", n.notShown, maxPageLogLines)
	}
	derr := reportDamage(e.stderr, "export", scan, *allowDamage)
	switch {
	case n.refused == 0 || derr != nil:
	case *allowDamage:
		fmt.Fprintf(e.stderr, "kspider export: %d stored pages could not be written as WARC and are not in %s (allowed by --allow-damage)\n", n.refused, *out)
	default:
		return fmt.Errorf("%d stored pages could not be written as WARC and are not in %s (logged above); --allow-damage to accept", n.refused, *out)
	}
	return derr
}

// fieldText is s as the value of a WARC field, which cannot hold a line
// break: quoted (Go syntax) when s has a control character, as a directory
// name may.
func fieldText(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}

// maxPageLogLines bounds the lines an export logs about single pages (one
// refused, a header line left out): a crawl of the real web has such pages
// by the hundred thousand, which would bury the summary; the rest are
// counted.
const maxPageLogLines = 100

// exportCounts is what exportPages did.
type exportCounts struct {
	written, refused int // pages written, pages that could not be (warc.PageError)
	droppedLines     int // malformed header lines left out of pages written
	droppedPages     int // pages with such lines
	logged, notShown int // lines logged about single pages, and left unlogged past maxPageLogLines
}

// logPage logs a line about a single page, the first maxPageLogLines only.
func (n *exportCounts) logPage(w io.Writer, format string, a ...any) {
	if n.logged == maxPageLogLines {
		n.notShown++
		return
	}
	n.logged++
	fmt.Fprintf(w, format, a...)
}

// exportPages writes every page of r as a response record. Workers compress
// records into gzip members, nearly all of the work, and take turns writing
// them (see stats.ScanWorkers), so the export uses every core however many
// directories the store has. Records come out in no particular order.
func exportPages(ctx context.Context, e env, r *storage.Reader, w *warc.Writer, infoID string) (n exportCounts, err error) {
	var mu sync.Mutex // guards w and n
	var count stats.PageCount
	terminal := stats.IsTerminal(e.stderr)
	stderr := &lockedWriter{w: e.stderr} // shared with the progress line's goroutine
	stopProgress := startScanProgress(stderr, terminal, &count, r)
	defer stopProgress()
	var clearLine string // a line logged on a terminal first clears the progress line, redrawn after it
	if terminal {
		clearLine = clearProgressLine
	}
	err = stats.ScanWorkers(ctx, r, 0, func() func(*storage.Page) error {
		enc := warc.NewEncoder()
		return func(p *storage.Page) error {
			member, dropped, err := enc.Response(p, infoID)
			mu.Lock()
			defer mu.Unlock()
			var pe *warc.PageError
			switch {
			case errors.As(err, &pe):
				n.refused++
				n.logPage(stderr, "%skspider export: skipped: %v\n", clearLine, err)
				return nil
			case err != nil:
				return err
			}
			for _, d := range dropped {
				n.logPage(stderr, "%skspider export: page %d (%s): left out malformed %s\n", clearLine, p.URLID, p.URL, d)
			}
			if len(dropped) > 0 {
				n.droppedLines += len(dropped)
				n.droppedPages++
			}
			if err := w.WriteMember(member); err != nil {
				return err
			}
			count.Add(p)
			n.written++
			return nil
		}
	})
	return n, err
}

// writeFileAtomic writes path through fill with createAtomic: path is
// never seen half written.
func writeFileAtomic(path string, fill func(io.Writer) error) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	defer a.abort()
	if err := fill(a); err != nil {
		return err
	}
	return a.commit()
}

// atomicFile is an output file written into a temporary file in the same
// directory, synced and renamed over its path only by commit, so the path
// is never seen half written. The temporary file is named
// .BASE.kspider-tmp.PID.RANDOM and flocked while its process lives; a
// process killed while writing leaves it behind, so createAtomic first
// removes temporaries of the path that no process holds.
type atomicFile struct {
	path      string // what commit renames over: the operator's path, links followed
	f         *os.File
	bw        *bufio.Writer
	committed bool
}

// createAtomic checks path and opens its temporary file, before a command
// does its work: a path that cannot be written fails at once, not after an
// hour's scan.
func createAtomic(path string) (*atomicFile, error) {
	target, err := outputPath(path)
	if err != nil {
		return nil, err
	}
	removeStaleTemps(target)
	f, err := os.CreateTemp(filepath.Dir(target), tempPrefix(target)+strconv.Itoa(os.Getpid())+".*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, err)
	}
	// Held until the file is closed, the flock tells another export's
	// removeStaleTemps that this temporary is live.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		os.Remove(f.Name())
		f.Close()
		return nil, fmt.Errorf("cannot write %s: locking its temporary file %s: %w", path, f.Name(), err)
	}
	return &atomicFile{path: target, f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (a *atomicFile) Write(p []byte) (int, error) { return a.bw.Write(p) }

// abort removes the temporary file, path left as it was, unless commit
// has renamed it: deferred, it is the one cleanup on every way out.
func (a *atomicFile) abort() {
	if a.committed {
		return
	}
	a.f.Close()
	os.Remove(a.f.Name())
}

// commit makes the file durable under its path. On failure the temporary
// file is left to abort, which every caller defers.
func (a *atomicFile) commit() error {
	if err := a.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", a.f.Name(), err)
	}
	if err := a.f.Chmod(0o644); err != nil {
		return err
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", a.f.Name(), err)
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", a.f.Name(), err)
	}
	if err := os.Rename(a.f.Name(), a.path); err != nil {
		return err
	}
	a.committed = true
	// The rename is durable once the directory is synced.
	if d, err := os.Open(filepath.Dir(a.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// outputPath is the file an atomicFile for path replaces. A symbolic link
// is followed, so the file it names is replaced and the link kept.
// Anything but a regular file or a new name is refused: renaming over a
// directory would fail only after all the work, and over a device
// (/dev/stdout is a link to one) would replace it with a plain file. So is
// a write-protected file.
func outputPath(path string) (string, error) {
	if path == "-" {
		return "", usagef("cannot write to standard output (-): the file is written under a temporary name and renamed; name a file")
	}
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("cannot write %s: a symbolic link to a file that does not exist", path)
		}
		return path, nil // a new file; creating it reports a missing directory
	}
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	}
	fi, err := os.Stat(target)
	switch {
	case err != nil:
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	case fi.IsDir():
		return "", fmt.Errorf("cannot write %s: it is a directory", path)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("cannot write %s: %s; the output is written under a temporary name and renamed over its path", path, fileKind(fi.Mode()))
	case fi.Mode().Perm()&0o222 == 0:
		// The rename needs only the directory's permission: it would
		// replace a file kept from being overwritten, as '>' and cp do not.
		return "", fmt.Errorf("cannot write %s: it is write-protected (mode %v), and the output would replace it; remove it or chmod u+w it first", path, fi.Mode())
	}
	return target, nil
}

// tempPrefix is how writeFileAtomic's temporaries for path begin.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".kspider-tmp." }

// removeStaleTemps removes writeFileAtomic's temporaries for path left by
// processes that no longer run (killed mid-write). Those of a live process
// - another export to the same file - are left alone: its flock on the
// file says so.
func removeStaleTemps(path string) {
	prefix := tempPrefix(path)
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return // creating the temporary file will report it
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if _, _, ok := strings.Cut(rest, "."); !ok {
			continue
		}
		name := filepath.Join(filepath.Dir(path), e.Name())
		if unlock, ok := lockTemp(name); ok {
			os.Remove(name)
			unlock()
		}
	}
}

// lockTemp takes the flock(2) that createAtomic's process holds on its
// temporary file while it lives: ok means no live process writes it. The
// PID in the name is not asked (kill(PID, 0)): an export in another PID
// namespace (a container sharing the directory) is no process here, and
// a PID reused since names a process that is not the writer.
func lockTemp(name string) (unlock func(), ok bool) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
