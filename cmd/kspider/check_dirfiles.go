package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/status"
	"github.com/kspider/kspider/storage"
)

// The small files of a data directory that a node's start reads and
// refuses to start with when damaged (DEPTH, SCOPE, STORES): check reads
// each as the start does, so that 'ok' means the node starts. None can be
// rebuilt here; what to do is in the error (delete the file, and what the
// next run does then).

// checkDepth verifies DIR/DEPTH, the depth limit the directory was
// crawled to.
func checkDepth(dir string, repair bool, w io.Writer) (problems int, err error) {
	d, err := spider.CheckDepthFile(dir)
	return reportDirFile(w, "depth", dir, spider.DepthFile, fmt.Sprintf("crawled to max_depth %d", d), err)
}

// checkScope verifies DIR/SCOPE, the scope the directory was crawled
// under.
func checkScope(dir string, repair bool, w io.Writer) (problems int, err error) {
	says, err := spider.CheckScopeFile(dir)
	return reportDirFile(w, "scope", dir, spider.ScopeFile, says, err)
}

// checkStores verifies DIR/STORES, the page store directories that have
// held the crawl's pages: the start refuses a damaged file, and one
// naming a directory that holds no pages now (a disk not mounted).
func checkStores(dir string, repair bool, w io.Writer) (problems int, err error) {
	dirs, err := spider.ReadStoreDirs(dir)
	if err != nil {
		return reportDirFile(w, "stores", dir, spider.StoresFile, "", err)
	}
	path := filepath.Join(dir, spider.StoresFile)
	for _, d := range dirs {
		held, err := storage.HoldsPages(d)
		switch {
		case err != nil:
			fmt.Fprintf(w, "stores: %s names %s, which cannot be read: %v\n", path, d, err)
			problems++
		case !held:
			fmt.Fprintf(w, "stores: %s names %s, which held pages of the crawl but holds none now (its disk not mounted, or emptied): the node refuses to start; mount or restore it (if its pages are lost for good, delete %s)\n", path, d, path)
			problems++
		}
	}
	if problems == 0 {
		fmt.Fprintf(w, "stores: %s: ok: %s\n", path, strings.Join(dirs, ", "))
	}
	return problems, nil
}

// checkToken verifies DIR/STATUS_TOKEN as the node's start reads it
// (status.ReadToken): one it refuses (others may read it, not a file, not
// a token) does not stop the start, which serves the page with control
// off and a warning in its log, so kspider ctl fails later with nothing
// here to say why. None, or an empty one (a crash of an older kspider),
// is made anew at the start.
func checkToken(dir string, repair bool, w io.Writer) (problems int, err error) {
	path := filepath.Join(dir, status.TokenFile)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		fmt.Fprintf(w, "token: %s: ok: empty, a new token is made at the node's next start\n", path)
		return 0, nil
	}
	if _, err := status.ReadToken(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		fmt.Fprintf(w, "token: %v\n", err)
		fmt.Fprintf(w, "token: %s: cannot repair here: the node starts with control off (kspider ctl refused) until it is fixed (what to do is said above)\n", path)
		return 1, nil
	}
	fmt.Fprintf(w, "token: %s: ok: mode 600, a token\n", path)
	return 0, nil
}

// checkLock verifies DIR/LOCK as the node's start opens it
// (spider.CheckLockFile): one it refuses (a link, a FIFO, a directory, a
// hard link to another file) stops the start. None is made at the start.
func checkLock(dir string, repair bool, w io.Writer) (problems int, err error) {
	return reportDirFile(w, "lock", dir, "LOCK", "a file of its own", spider.CheckLockFile(dir))
}

// reportDirFile prints what reading file of dir gave: ok with what it
// says, or damaged (one problem), in the words of the start's refusal.
func reportDirFile(w io.Writer, name, dir, file, says string, err error) (int, error) {
	path := filepath.Join(dir, file)
	switch {
	case err == nil:
		fmt.Fprintf(w, "%s: %s: ok: %s\n", name, path, says)
		return 0, nil
	case errors.Is(err, fs.ErrNotExist):
		return 0, err
	}
	// The start's own reader may name the part already ("lock: ...").
	fmt.Fprintf(w, "%s: %s\n", name, strings.TrimPrefix(err.Error(), name+": "))
	fmt.Fprintf(w, "%s: %s: cannot repair here: the node refuses to start with it (what to do is said above)\n", name, path)
	return 1, nil
}
