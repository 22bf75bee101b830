package spider

import (
	"fmt"
	"os"
)

// A node's files stay open for its whole run, so a data directory removed,
// renamed or replaced under it goes unnoticed by every write: the tree,
// the scheduler and the store write on into files no path reaches, the
// crawl "finishes" with exit 0 and none of it is left. dirWatch remembers
// what the node's paths led to when it opened them, and says when one no
// longer does; the writer looks before each sync and Close at the end.

// dirWatch is the directories (and the lock file) a node opened.
type dirWatch []watchedPath

type watchedPath struct {
	path string
	fi   os.FileInfo
}

// watchPaths remembers what paths lead to now.
func watchPaths(paths ...string) (dirWatch, error) {
	w := make(dirWatch, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("spider: %w", err)
		}
		w = append(w, watchedPath{path: p, fi: fi})
	}
	return w, nil
}

// check says which path, if any, no longer leads where it did.
func (w dirWatch) check() error {
	for _, p := range w {
		fi, err := os.Stat(p.path)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("checking the data directory: %w", err)
		}
		if err != nil || !os.SameFile(fi, p.fi) {
			return fmt.Errorf("%s was removed or replaced while the node ran: the node's files are no longer there", p.path)
		}
	}
	return nil
}
