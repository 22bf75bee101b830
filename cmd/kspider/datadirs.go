package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// given) holds its store in pages/, and an operator naturally names the
// node's directory, so a directory without segments or index of its own
// but with a pages/ subdirectory stands for that subdirectory. Two names
// of one store (node and node/pages, a path and a link to it) are an
// error: the store would be read twice and its size counted twice.
func storeDirs(dirs []string) ([]string, error) {
	out := make([]string, len(dirs))
	seen := make([]os.FileInfo, len(dirs))
	for i, d := range dirs {
		out[i] = d
		if !holdsStore(d) {
			if fi, err := os.Stat(filepath.Join(d, "pages")); err == nil && fi.IsDir() {
				out[i] = filepath.Join(d, "pages")
			}
		}
		fi, err := os.Stat(out[i])
		if err != nil {
			continue // OpenReader says what is wrong with it
		}
		for j := range i {
			if seen[j] != nil && os.SameFile(seen[j], fi) {
				return nil, usagef("--data %s and --data %s are the same store (%s)", dirs[j], d, out[i])
			}
		}
		seen[i] = fi
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
