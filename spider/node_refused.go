package spider

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A start the node refuses (a sched/ of another tree, a page store of
// another crawl, a cluster record that does not match) leaves the data
// directory as it found it. What the open made on the way to the refusal
// would change what the next start and kspider check say: an empty
// urls/ beside a refused sched/ takes the place of the tree the refusal
// says to put back (mv or cp of it then lands inside), and the directory
// is no longer new to its next start; an IDENTITY recorded for a node
// that was refused refuses the node the directory is meant for. So the
// paths an open may create are noted after the lock is taken, and those
// it did not find are removed when it is refused. DIR and DIR/LOCK stay:
// the lock file means nothing without its flock (lock.go).

// startMade is the paths of a data directory an open may create that it
// did not find.
type startMade []madePath

// madePath is one such path; store when it is a page store directory,
// which lies outside DIR and so outside DIR/LOCK's protection.
type madePath struct {
	path  string
	store bool
}

// absentPaths notes which of the paths a node's open may create in dir,
// and which of its page store directories, are not there.
func absentPaths(dir string, storageDirs []string) startMade {
	var paths []string
	for _, name := range []string{IdentityFile, StoresFile, DepthFile, ScopeFile, ClusterFile, treeSubdir, "sched", "comm"} {
		paths = append(paths, filepath.Join(dir, name))
	}
	var absent startMade
	for i, p := range append(paths, storageDirs...) {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, madePath{path: p, store: i >= len(paths)})
		}
	}
	return absent
}

// undo removes what a refused open made of the paths it did not find.
func (m startMade) undo() error {
	var errs []error
	for _, p := range m {
		if p.store {
			// Another node given the same page store directory (a
			// config mistake) may have made it since the look and be
			// writing its pages there: a store directory is removed
			// only while its own LOCK can be taken.
			unlock, err := lockStoreDir(p.path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			err = os.RemoveAll(p.path)
			unlock()
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := os.RemoveAll(p.path); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("spider: removing what the refused start made, so that the next start finds the directory as this one did (remove them by hand): %w", errors.Join(errs...))
	}
	return nil
}

// lockStoreDir takes the flock(2) of a page store directory's LOCK, as a
// Store writing it holds it (storage/doc.go), if the directory has one.
func lockStoreDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not removed: %w", dir, err)
	}
	if err := flock(f); err != nil { // lock.go
		f.Close()
		return nil, fmt.Errorf("%s: not removed: another store is writing it (its LOCK: %w)", dir, err)
	}
	return func() { f.Close() }, nil
}

// A start's own view of the directory's crawl, a lowered depth limit or a
// narrowed scope (and a new directory's first DEPTH and SCOPE), is
// recorded only once the start can no longer be refused. Written as the
// open found it, a start refused after (SCOPE damaged, a CLUSTER record
// that does not match) left DEPTH or SCOPE saying the directory was
// crawled to a limit or under a scope it never was: the next start, with
// the config it had been crawled under, took the limit for raised or the
// scope for changed and made the pass over every stored page again.

// dirRecord is a file of the data directory to write at the start's end;
// the zero dirRecord writes nothing.
type dirRecord struct {
	name string
	body []byte
}

// recordAtStart writes recs in dir, in order.
func recordAtStart(dir string, recs ...dirRecord) error {
	for _, r := range recs {
		if r.name == "" {
			continue
		}
		if err := writeDirFile(dir, r.name, r.body); err != nil {
			return err
		}
	}
	return nil
}
