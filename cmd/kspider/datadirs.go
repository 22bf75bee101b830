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
// but with a pages/ subdirectory stands for that subdirectory.
func storeDirs(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = d
		if holdsStore(d) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(d, "pages")); err == nil && fi.IsDir() {
			out[i] = filepath.Join(d, "pages")
		}
	}
	return out
}

// holdsStore reports whether dir has a page index or segment files.
func holdsStore(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "url.idx")); err == nil {
		return true
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	return len(segs) > 0
}
