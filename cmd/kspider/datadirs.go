package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kspider/kspider/spider"
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
		if fi, err := os.Stat(filepath.Join(d, "pages")); err == nil && fi.IsDir() {
			d = filepath.Join(d, "pages")
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

// holdsStore reports whether dir has a page index or segment files.
func holdsStore(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "url.idx")); err == nil {
		return true
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	return len(segs) > 0
}

// checkOutsideStores refuses an output path whose file would land in one
// of dirs (the --data directories and the stores they stand for): renamed
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
			if di, err := os.Stat(d); err == nil && os.SameFile(fi, di) {
				return usagef("%s would be written into the data directory %s, over any file of that name there; write it elsewhere", out, d)
			}
		}
	}
	return nil
}
