package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// dataDirsFlag is the repeatable --data flag of the offline tools (get,
// stats, export, check).
type dataDirsFlag []string

func (d *dataDirsFlag) String() string { return strings.Join(*d, ",") }

func (d *dataDirsFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty directory")
	}
	if slices.Contains(*d, v) {
		return fmt.Errorf("%s given twice", v)
	}
	*d = append(*d, v)
	return nil
}

// storeDirs returns the page store directories named by dirs: a node's
// data directory (what 'kspider run --dir' and 'kspider demo --dir' are
// given) stands for the directories its STORES names (storage.dirs, on
// other disks too: read from pages/ only, a crawl spread over two disks
// was half exported, exit 0), or, without that file, its pages/. Two
// names of one store given (node and node/pages, a path and a link to it)
// are an error: the store would be read twice and its size counted twice;
// a directory STORES names that is also given is read once.
func storeDirs(dirs []string) ([]string, error) {
	type named struct {
		path, given string
		fromStores  bool
	}
	var list []named
	for _, d := range dirs {
		if err := checkDataDir(d); err != nil {
			return nil, err
		}
		if holdsStore(d) {
			list = append(list, named{d, d, false})
			continue
		}
		recorded, err := spider.ReadStoreDirs(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if len(recorded) > 0 {
			for _, r := range recorded {
				list = append(list, named{r, d, true})
			}
			continue
		}
		pages, err := nodeStoreDir(d)
		if err != nil {
			return nil, err
		}
		if pages != "" {
			d = pages
		}
		list = append(list, named{d, d, false})
	}
	var out []string
	var seen []os.FileInfo
	var from []named
next:
	for _, n := range list {
		fi, err := os.Stat(n.path)
		if err != nil {
			out = append(out, n.path) // OpenReader says what is wrong with it
			continue
		}
		for j, s := range seen {
			if !os.SameFile(s, fi) {
				continue
			}
			if n.fromStores || from[j].fromStores {
				continue next
			}
			return nil, usagef("--data %s and --data %s are the same store (%s)", from[j].given, n.given, n.path)
		}
		out, seen, from = append(out, n.path), append(seen, fi), append(from, n)
	}
	return out, nil
}

// checkDataDir refuses a --data d that is not a directory. Read as one, a
// file, a FIFO or a link looping to itself was said as 'open d/STORES: not
// a directory', naming a file the operator never gave. A d that does not
// exist is left to storage.OpenReader, which says so.
func checkDataDir(d string) error {
	fi, err := os.Stat(d)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &pe):
		return fmt.Errorf("--data %s: %v", d, pe.Err)
	case err != nil:
		return fmt.Errorf("--data %s: %w", d, err)
	case !fi.IsDir():
		return fmt.Errorf("--data %s: %s, not a directory: give a page store directory or a node's data directory", d, fileKind(fi.Mode()))
	}
	return nil
}

// nodeStoreDir returns the page store of node data directory d, d/pages,
// or "" when d has none. A d/pages that is not a directory (a link to a
// disk not mounted, a FIFO, a link looping to itself) is an error saying
// so: read past, it was refused as 'd: no page store', d itself blamed.
func nodeStoreDir(d string) (string, error) {
	pages := filepath.Join(d, "pages")
	li, err := os.Lstat(pages)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	fi, err := os.Stat(pages)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist) && li.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(pages)
		return "", fmt.Errorf("--data %s: its page store %s is a symbolic link to %s, which does not exist (a disk not mounted?)", d, pages, to)
	case errors.As(err, &pe):
		return "", fmt.Errorf("--data %s: its page store %s: %v", d, pages, pe.Err)
	case err != nil:
		return "", fmt.Errorf("--data %s: its page store %s: %w", d, pages, err)
	case !fi.IsDir():
		return "", fmt.Errorf("--data %s: its page store %s is %s, not a directory", d, pages, fileKind(fi.Mode()))
	}
	return pages, nil
}

// fileKind says what a file of mode m is, for an error about a file that
// is not the kind wanted.
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// holdsStore reports whether dir has a page index or segment files.
func holdsStore(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "url.idx")); err == nil {
		return true
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	return len(segs) > 0
}

// checkOutsideStores refuses an output path whose file would land in one
// of dirs (the --data directories and the stores they stand for) or in a
// node's urls/, sched/ or comm/ among them: renamed
// into place, the output would replace a file of the store or the node
// of the same name (a segment, url.idx, IDENTITY) after the scan.
func checkOutsideStores(out string, dirs ...[]string) error {
	target, err := outputPath(out)
	if err != nil {
		return err
	}
	fi, err := os.Stat(filepath.Dir(target))
	if err != nil {
		return nil // creating the file reports it
	}
	for _, ds := range dirs {
		for _, d := range ds {
			// A node's state directories too: --html DIR/sched/sched.meta
			// would replace the scheduler's file.
			for _, in := range []string{d, filepath.Join(d, "urls"), filepath.Join(d, "sched"), filepath.Join(d, "comm")} {
				if di, err := os.Stat(in); err == nil && os.SameFile(fi, di) {
					return usagef("%s would be written into the data directory %s, over any file of that name there; write it elsewhere", out, in)
				}
			}
		}
	}
	return nil
}

// checkStoreTree holds the store r reads to the URL tree of the node data
// directories among given (DIR/urls), as a node's start holds its store
// (storage.Config.TreeID): the pages are stored by URL ids, which only
// that tree maps to URLs, so the store of another data directory read
// under this one's name printed another URL's page as the one asked for.
// What could not be compared (bare store directories, no tree, a store or
// tree from before identities) is said on w.
func checkStoreTree(w io.Writer, cmd string, given []string, r *storage.Reader) error {
	var tree urltree.ID
	var treeDir string
	var bare []string
	for _, d := range given {
		if holdsStore(d) {
			bare = append(bare, d)
			continue
		}
		dir := filepath.Join(d, "urls")
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			bare = append(bare, d)
			continue
		}
		// The ID alone, from the tree's header: opening the tree
		// verifies it whole and, unless it was closed cleanly, rebuilds
		// it in memory, to no use here (check verifies it).
		id, err := urltree.ReadID(dir)
		if err != nil {
			return fmt.Errorf("cannot hold the page store to the URL tree in %s, whose ids it is stored by: %w ('kspider check --data %s' says more; --data with the store directories themselves reads the pages without comparing)", dir, err, d)
		}
		switch {
		case id.IsZero():
			fmt.Fprintf(w, "kspider %s: note: the URL tree in %s has no ID (format version 2): the page store not compared with it\n", cmd, dir)
		case tree.IsZero():
			tree, treeDir = id, dir
		case id != tree:
			return usagef("%s is URL tree %v, but %s is URL tree %v: data directories of two nodes given together; give one node's", treeDir, tree, dir, id)
		}
	}
	store, from := r.StoreID()
	switch {
	case tree.IsZero() && len(bare) > 0:
		fmt.Fprintf(w, "kspider %s: note: %s: no URL tree there (store directories, or a data directory without urls/): the page store not compared with one, its URL ids taken as the right tree's (give the node's data directory to have them checked)\n", cmd, strings.Join(bare, ", "))
	case tree.IsZero():
	case store == [16]byte{}:
		fmt.Fprintf(w, "kspider %s: note: the page store names no ID (written before store identities): not compared with the URL tree in %s\n", cmd, treeDir)
	case store != tree:
		return fmt.Errorf("%s names page store %x, but %s is URL tree %v: %w page store, of another data directory (swapped?), whose URL ids name other URLs; put back this node's own store", from, store, treeDir, tree, storage.ErrForeign)
	}
	return nil
}
