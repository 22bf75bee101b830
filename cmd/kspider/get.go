package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
	"github.com/kspider/kspider/urltree"
)

func runGet(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "get", "get --data DIR [--data DIR ...] [-i] URL|ID", `
Prints the body of one stored page; with -i, the status line and the
response headers first, as received. The page is named by its URL id, which
is one index lookup, or by its URL: given a node's data directory, the URL
tree there (DIR/urls) gives its id, and then one lookup; given store
directories alone, the store is scanned for it. Give every data directory of the
node with --data; a node's data directory holds its store to its URL tree
(DIR/urls), whose ids the pages are stored by. When a URL id was stored more than once, the latest fetch
is printed. A page is printed only if its record passes its checksum; damage
met elsewhere in the store (a damaged index, which is then rebuilt from the
segments in memory) is reported on stderr and makes the exit status 1 unless
--allow-damage is given. On a terminal, a page holding control bytes (ESC and
the others but tab, CR and LF) is refused, naming the first: redirect the
output to have its bytes as stored.`)
	var dirs dataDirsFlag
	fs.Var(&dirs, "data", "a store `DIR`ectory, or a node's data directory (its store is DIR/pages); repeat for each disk")
	withHeaders := fs.Bool("i", false, "print the status line and headers before the body")
	allowDamage := allowDamageFlag(fs)
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	if len(dirs) == 0 {
		return usagef("--data DIR is required")
	}
	if fs.NArg() != 1 {
		return usagef("want exactly one URL or URL id, got %d arguments", fs.NArg())
	}
	arg := fs.Arg(0)
	sdirs, err := storeDirs(dirs)
	if err != nil {
		return err
	}
	r, err := openStore(ctx, e.stderr, "get", sdirs)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := checkStoreTree(e.stderr, "get", dirs, r); err != nil {
		return err
	}
	var p *storage.Page
	if id, perr := strconv.ParseUint(arg, 10, 64); perr == nil {
		if p, err = r.Get(id); errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("no stored page with URL id %d in %s", id, dirs.String())
		}
	} else if tree := nodeTree(dirs); tree != "" {
		p, err = findInTree(r, tree, arg)
	} else {
		p, err = findByURL(ctx, e.stderr, r, arg)
	}
	if err != nil {
		reportDamageOnFailure(e.stderr, "get", r.Stats())
		return err
	}
	if stats.IsTerminal(e.stdout) {
		if err := terminalSafe(p, *withHeaders); err != nil {
			return err
		}
	}
	if *withHeaders {
		head := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\n", p.Status, http.StatusText(p.Status))
		head = append(head, p.Header...)
		if len(p.Header) > 0 && !bytes.HasSuffix(p.Header, []byte("\r\n")) {
			head = append(head, "\r\n"...)
		}
		head = append(head, "\r\n"...)
		// A failed write of the head must fail get: a page's body may be
		// empty, and writing no bytes cannot fail.
		if _, err = e.stdout.Write(head); err != nil {
			return err
		}
	}
	if _, err = e.stdout.Write(p.Body); err != nil {
		return err
	}
	return reportDamage(e.stderr, "get", r.Stats(), *allowDamage)
}

// nodeTree returns the URL tree of the first node data directory among
// given (DIR/urls), "" when none has one.
func nodeTree(given []string) string {
	for _, d := range given {
		if holdsStore(d) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "urls")); err == nil && fi.IsDir() {
			return filepath.Join(d, "urls")
		}
	}
	return ""
}

// findInTree reads the page stored under rawURL by its id in the URL tree
// in dir, which checkStoreTree has held the store to: one lookup, where
// findByURL reads the whole store.
func findInTree(r *storage.Reader, dir, rawURL string) (*storage.Page, error) {
	t, err := urltree.Open(dir, &urltree.Options{ReadOnly: true, MaxURLLen: urltree.MaxURLLenLimit})
	if err != nil {
		return nil, fmt.Errorf("cannot look %q up in the URL tree in %s: %w ('kspider check' says more; --data with the store directories themselves scans them for it)", rawURL, dir, err)
	}
	id, ok := t.FindString(rawURL)
	t.Close()
	if !ok {
		return nil, fmt.Errorf("no stored page for URL %q: it is not in the URL tree in %s", rawURL, dir)
	}
	p, err := r.Get(uint64(id))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("no stored page for URL %q (URL id %d in the URL tree in %s)", rawURL, id, dir)
	case err != nil:
		return nil, err
	case p.URL != rawURL:
		return nil, fmt.Errorf("the URL tree in %s gives %q URL id %d, but the page stored under that id is of %q: a store of another crawl ('kspider check' says more)", dir, rawURL, id, p.URL)
	}
	return p, nil
}

// findByURL scans the store for the page stored under rawURL, its
// progress on stderr: a scan of the whole store takes as long as
// kspider stats.
func findByURL(ctx context.Context, stderr io.Writer, r *storage.Reader, rawURL string) (*storage.Page, error) {
	errFound := errors.New("found")
	var (
		mu    sync.Mutex
		found *storage.Page
		count stats.PageCount
	)
	stopProgress := startScanProgress(stderr, stats.IsTerminal(stderr), &count, r)
	err := r.Scan(ctx, func(p *storage.Page) error {
		count.Add(p)
		if p.URL != rawURL {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if found == nil || p.FetchTime.After(found.FetchTime) {
			found = p
		}
		return errFound
	})
	stopProgress()
	switch {
	case interrupted(ctx, err):
		return nil, fmt.Errorf("interrupted before a page stored for URL %q was found", rawURL)
	case err != nil && !errors.Is(err, errFound):
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("no stored page for URL %q", rawURL)
	}
	return found, nil
}

// terminalSafe refuses a page whose bytes a terminal would act on (ESC and
// the other control bytes but tab, line feed and carriage return; C1
// controls in UTF-8), as curl refuses binary output to one: a hostile
// page could retitle the window, rewrite what was printed before or, on
// some terminals, have keys typed. Redirected to a file or a pipe, the
// bytes go out as stored.
func terminalSafe(p *storage.Page, withHeaders bool) error {
	if withHeaders {
		if err := noControlBytes(p, "headers", p.Header); err != nil {
			return err
		}
	}
	return noControlBytes(p, "body", p.Body)
}

// noControlBytes refuses b, the part what of p's page, if it holds a
// control byte (controlByte).
func noControlBytes(p *storage.Page, what string, b []byte) error {
	if off, c := controlByte(b); off >= 0 {
		return fmt.Errorf("the page of %q holds a control byte (0x%02x at offset %d of its %s) that a terminal would act on: not printed to one; redirect the output (kspider get ... > page) to have its bytes as stored", p.URL, c, off, what)
	}
	return nil
}

// controlByte returns the offset and value of b's first byte that a
// terminal would take as a control (C0 but tab, LF and CR; DEL; the
// UTF-8 encodings of C1, U+0080 to U+009F, given by their second byte),
// or -1.
func controlByte(b []byte) (int, byte) {
	for i, c := range b {
		switch {
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r', c == 0x7f:
			return i, c
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			return i, b[i+1]
		}
	}
	return -1, 0
}
