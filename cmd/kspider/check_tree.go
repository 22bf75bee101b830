package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/kspider/kspider/urltree"
)

// treeID is the URL tree's ID that checkTree found in a data directory,
// and the file it read it from, for checkSched to hold the scheduler to;
// found says checkTree found a tree at all, in dir. checked is the run's
// (checkPages).
type treeID struct {
	id      urltree.ID
	file    string
	dir     string
	found   bool
	checked *checkedDirs
}

// checkTree is the URL tree's checker for kspider check: urltree.Check,
// printed one finding per line with its file and offset.
func (tree *treeID) checkTree(dir string, repair bool, w io.Writer) (problems int, err error) {
	rep, err := urltree.Check(dir, repair)
	if errors.Is(err, urltree.ErrNoTree) {
		return 0, fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
	}
	if rep == nil {
		return 0, err
	}
	tree.id, tree.file, tree.dir, tree.found = rep.ID, rep.IDFile, dir, true
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "urls: %s\n", f)
		if f.Damage {
			problems++
		}
	}
	switch {
	case problems == 0:
		fmt.Fprintf(w, "urls: %s: ok: %d URLs\n", dir, rep.URLs)
	case rep.Newer:
		fmt.Fprintf(w, "urls: %s: files of a newer format version (named above): check them with the kspider that wrote them; this one neither reads nor repairs them\n", dir)
	case len(rep.Foreign) > 0:
		// No repair mixes two trees' files: pointing at --repair, as for
		// other damage, sent the operator to a repair that refuses.
		fmt.Fprintf(w, "urls: %s: %d problems; %s of another URL tree (named above): no repair mixes two trees' files; put back this tree's own\n",
			dir, problems, strings.Join(rep.Foreign, ", "))
	case rep.Repaired:
		fmt.Fprintf(w, "urls: %s: repaired: %d URLs, %d lost (old files in %s)\n", dir, rep.URLs, rep.Lost, rep.Quarantine)
	default:
		fmt.Fprintf(w, "urls: %s: %d problems, %d of %d URLs cannot be read back; run kspider check --repair to rebuild what can be rebuilt\n",
			dir, problems, rep.Lost, rep.URLs)
	}
	return problems, err
}

// orSubdir makes a checker look in dir/sub when dir itself holds none of
// its files, so --data takes a node's data directory (which keeps the URL
// tree in urls/ and the pages in pages/) as well as the part's own
// directory.
func orSubdir(sub string, check func(string, bool, io.Writer) (int, error)) func(string, bool, io.Writer) (int, error) {
	return func(dir string, repair bool, w io.Writer) (int, error) {
		n, err := check(dir, repair, w)
		if errors.Is(err, fs.ErrNotExist) {
			return check(dir+"/"+sub, repair, w)
		}
		return n, err
	}
}
