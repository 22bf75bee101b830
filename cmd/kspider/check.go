package main

import (
	"context"
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
)

// checker verifies one kind of file in a node's data directory. check
// prints what is damaged to w (one line per problem, naming the file and
// offset) and returns how many problems it found; with repair it also
// rewrites what can be rebuilt and moves the rest into dir/damaged/. An
// error wrapping fs.ErrNotExist means the directory holds none of its files.
type checker struct {
	name    string
	check   func(dir string, repair bool, w io.Writer) (problems int, err error)
	repairs bool // whether --repair mends its problems; the others only say what to do
}

// checkers lists what kspider check verifies, in order: the URL tree
// before the scheduler, which is checked against the tree's ID as Open
// checks it (tree is what the first found).
func checkers(tree *treeID) []checker {
	return []checker{
		{"urls", orSubdir("urls", tree.checkTree), true},
		{"pages", tree.checkNodePages, true},
		{"sched", orSubdir("sched", tree.checkSched), true},
		{"spill", orSubdir("comm", checkSpill), false},
		{"identity", checkIdentity, false},
		{"cluster", checkCluster, false},
		{"depth", checkDepth, false},
		{"scope", checkScope, false},
		{"stores", checkStores, false},
		{"token", checkToken, false},
		{"lock", checkLock, false},
	}
}

// checkPages is the page store's checker: storage.CheckFor, held to the
// URL tree's ID as Open holds the node's store to it.
// A store checked before in this run (named in a node's STORES and given
// with --data too) is not checked again.
func (tree *treeID) checkPages(dir string, repair bool, w io.Writer) (int, error) {
	if was, ok := tree.checked.before(dir); ok {
		fmt.Fprintf(w, "pages: %s: checked above, as %s\n", dir, was)
		return 0, nil
	}
	n, err := storage.CheckFor(dir, repair, w, tree.id, tree.file)
	if !errors.Is(err, fs.ErrNotExist) {
		tree.checked.add(dir)
	}
	return n, err
}

// checkedDirs are the directories a check has looked at, so that one
// given twice (a store named in a node's STORES and given with --data, a
// directory under two names) is checked, and its problems counted, once.
type checkedDirs struct {
	infos []os.FileInfo
	names []string
}

// before returns the name under which dir was checked, if it was.
func (c *checkedDirs) before(dir string) (string, bool) {
	fi, err := os.Stat(dir)
	if c == nil || err != nil {
		return "", false
	}
	for i, s := range c.infos {
		if os.SameFile(s, fi) {
			return c.names[i], true
		}
	}
	return "", false
}

func (c *checkedDirs) add(dir string) {
	if fi, err := os.Stat(dir); c != nil && err == nil {
		c.infos, c.names = append(c.infos, fi), append(c.names, dir)
	}
}

// checkNodePages checks the page store of dir: dir itself when it holds
// one, else dir/pages and every directory its STORES names (storage.dirs,
// on other disks too). Only dir/pages was checked, so a node's pages on
// other disks were never looked at, and a store directory of another node
// named there was 'ok'. Each is held to the URL tree, and so to each
// other; with no tree ID, to each other directly.
func (tree *treeID) checkNodePages(dir string, repair bool, w io.Writer) (int, error) {
	n, err := tree.checkPages(dir, repair, w)
	if !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	none := err
	dirs := []string{filepath.Join(dir, "pages")}
	// A damaged STORES is the stores checker's to report.
	if recorded, err := spider.ReadStoreDirs(dir); err == nil {
		for _, d := range recorded {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	total := 0
	var found []string
	for _, d := range dirs {
		n, err := tree.checkPages(d, repair, w)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		found = append(found, d)
		total += n
		if err != nil {
			return total, fmt.Errorf("%s: %w", d, err)
		}
	}
	if len(found) == 0 {
		return 0, none
	}
	if len(found) > 1 && tree.id.IsZero() {
		// No tree to hold them to: held to each other, as the node's
		// start holds them (storage.Open).
		switch id, _, err := storage.StoreIDOf(found); {
		case errors.Is(err, storage.ErrForeign):
			fmt.Fprintf(w, "pages: damage: %v\n", err)
			total++
		case err != nil:
			return total, err
		case id == [16]byte{}:
			fmt.Fprintf(w, "pages: %s: neither a URL tree ID nor a store ID to hold its %d store directories to: not compared with each other\n", dir, len(found))
		}
	}
	return total, nil
}

func runCheck(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "check", "check --data DIR [--data DIR...] [--repair]",
		`Verifies every file of a node's data directory the way bbolt check does:
`+checkerNames()+`. Each problem is printed with its file and
offset. The exit status is 1 when anything is damaged.

DIR is a node's data directory (the URL tree in DIR/urls, the pages in
DIR/pages and the directories DIR/STORES names, the scheduler in DIR/sched, the communicator's spill files and
receive state in DIR/comm) or the directory of one part.

With --repair, what can be rebuilt is rewritten (the page index from the
segments; a segment with damaged records is rewritten with its intact ones;
the URL tree from its blocks that verify, every id keeping its number)
and everything damaged is moved into DIR/damaged/: nothing is ever deleted.
A damaged scheduler keeps what verifies: damaged URL records become gaps
(the node adds those URLs again when it meets them), a damaged file header
or a lost commit is written anew; other damage moves its files into
damaged/, and the node must add its URLs again from the URL tree. Spill
files are not repaired here (the endpoint keeps a damaged tail aside when
it starts); they are left in place and reported.
No crawl may be running on the directory (its lock is taken).`)
	var dirs dataDirsFlag
	fs.Var(&dirs, "data", "a data `DIR`ectory of the node (repeat for each disk)")
	repair := fs.Bool("repair", false, "rebuild what can be rebuilt, move the rest into DIR/damaged/")
	if err := parseDataFlags(e, fs, args); err != nil {
		return err
	}
	total := 0
	var failed []string
	var kept []unrepaired
	given, stores := &checkedDirs{}, &checkedDirs{}
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if was, ok := given.before(dir); ok {
			fmt.Fprintf(e.stdout, "%s: checked above, as %s\n", dir, was)
			continue
		}
		if node, ok := partOf(dir, dirs); ok {
			fmt.Fprintf(e.stdout, "%s: checked as part of %s, given too\n", dir, node)
			continue
		}
		given.add(dir)
		n, k, err := checkDir(dir, *repair, e.stdout, stores)
		total += n
		kept = append(kept, k...)
		if err != nil {
			// One --data that cannot be checked (a disk not mounted, a
			// node still running for --repair) ended the run, the
			// directories after it unchecked; each is said and the run
			// goes on.
			fmt.Fprintf(e.stderr, "kspider check: %v\n", err)
			failed = append(failed, dir)
		}
	}
	var problems []string
	switch {
	case total > 0 && *repair && len(kept) > 0:
		// It said "found and repaired" of problems no repair had touched:
		// a part that could not be checked and those after it, and the
		// files check cannot mend.
		n, names := 0, make([]string, len(kept))
		for i, k := range kept {
			n += k.problems
			names[i] = fmt.Sprintf("%s %s: %d (%s)", k.dir, k.part, k.problems, k.why)
		}
		problems = append(problems, fmt.Sprintf("%d problems found in %s, %d repaired, %d not repaired (said above): %s",
			total, strings.Join(dirs, ", "), total-n, n, strings.Join(names, ", ")))
	case total > 0:
		verb := "found"
		if *repair {
			verb = "found and repaired"
		}
		problems = append(problems, fmt.Sprintf("%d problems %s in %s", total, verb, strings.Join(dirs, ", ")))
	}
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("not checked (said above): %s", strings.Join(failed, ", ")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// unrepaired are the problems a part of dir had that --repair left as
// they were, and why.
type unrepaired struct {
	dir, part, why string
	problems       int
}

// repairs is what --repair does in one directory: it repairs until a
// part cannot be checked (or the node's lock cannot be taken), and then
// checks only, the rest not held to what it could not read. It keeps the
// problems left unrepaired, and why, for the run's last line.
type repairs struct {
	dir   string
	asked bool   // --repair was given
	offBy string // what turned repair off ("sched could not be checked"); "" while on
	kept  []unrepaired
}

// on reports whether the parts checked now are repaired.
func (r *repairs) on() bool { return r.asked && r.offBy == "" }

// turnOff makes the parts checked after now checked only, because of why.
func (r *repairs) turnOff(why string) {
	if r.on() {
		r.offBy = why
	}
}

// checked notes the n problems a part that could be checked found:
// unrepaired if the part's checker cannot repair, or repair was off.
func (r *repairs) checked(part string, mends bool, n int) {
	switch {
	case !r.asked || n == 0:
	case !mends:
		r.keep(part, "check cannot repair it", n)
	case !r.on():
		r.keep(part, "checked only, after "+r.offBy, n)
	}
}

// keep notes n problems of part left as they were, and why, when
// --repair was given.
func (r *repairs) keep(part, why string, n int) {
	if r.asked {
		r.kept = append(r.kept, unrepaired{r.dir, part, why, n})
	}
}

// checkDir runs every checker on dir and returns how many problems they
// found and, with repair, those it did not repair. stores are the store
// directories the run has checked so far. A repair holds the node's
// lock, as a crawl does: the URL tree has no lock of its own, so a repair
// beside a running node would rebuild the tree under it.
func checkDir(dir string, repair bool, w io.Writer, stores *checkedDirs) (total int, kept []unrepaired, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, nil, err
	}
	if !fi.IsDir() {
		return 0, nil, fmt.Errorf("%s is not a directory", dir)
	}
	rep := &repairs{dir: dir, asked: repair}
	if isNodeDir(dir) {
		if repair {
			lock, err := spider.LockDir(dir)
			switch {
			case errors.Is(err, spider.ErrDirLocked):
				return 0, nil, fmt.Errorf("not repairing: %w; stop the node first", err)
			case err != nil:
				// A LOCK the start refuses too (a link, a FIFO): no node
				// runs on it, and stopping one mends nothing. It left the
				// whole directory unchecked; the rest is checked, repairing
				// nothing without the lock, and the lock checker counts the
				// LOCK as a problem.
				fmt.Fprintf(w, "lock: %s: not repairing: %v: the parts are checked, not repaired\n", dir, err)
				rep.turnOff("the lock could not be taken")
			default:
				defer lock.Release()
			}
		} else if pid, held := spider.LockHolder(dir); held {
			// Read while a node writes it: what it is writing (a
			// segment's or a file's last record) may read as torn.
			fmt.Fprintf(w, "lock: %s: in use by a running node (pid %d): checked as it is being written, so a finding at the end of a file may be a write in progress; stop the node for a check to act on\n", dir, pid)
		}
	}
	found := 0
	tree := &treeID{checked: stores}
	var byID []string // the parts found whose records are by the tree's URL ids
	noTree := false
	for _, c := range checkers(tree) {
		n, err := c.check(dir, rep.on(), w)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(w, "%s: %s: none here\n", c.name, dir)
			noTree = noTree || c.name == "urls"
			continue
		}
		found++
		total += n
		if err != nil {
			// A part that could not be checked (a file that is a FIFO or
			// a directory, a repair refused, a read error) ended the
			// whole check, the other parts' damage unreported until it
			// was mended. Now it is a problem and the check goes on,
			// repairing nothing more: the rest cannot be held to a part
			// it could not read.
			fmt.Fprintf(w, "%s: %s: cannot check: %v\n", c.name, dir, err)
			if n == 0 {
				total++
			}
			rep.keep(c.name, "could not be checked", max(n, 1))
			if rep.on() {
				rep.turnOff(c.name + " could not be checked")
				fmt.Fprintf(w, "%s: %s: the parts below are checked, not repaired\n", c.name, dir)
			}
			continue
		}
		rep.checked(c.name, c.repairs, n)
		if c.name == "sched" || c.name == "pages" {
			byID = append(byID, c.name)
		}
	}
	if found == 0 {
		return 0, nil, fmt.Errorf("%s holds no kspider data (%s)", dir, checkerNames())
	}
	// A node's directory whose URL tree is gone (moved away, a link to a
	// disk not mounted, copied in part) was said ok, each part on its own
	// fine, though their records name URLs by ids no tree holds: the node
	// refuses to start on it, or, a scheduler from before format version
	// 3 and no pages, takes it for a new crawl's.
	if noTree && len(byID) > 0 && isNodeDir(dir) {
		fmt.Fprintf(w, "urls: %s: no URL tree (in %s), but the directory holds a crawl's %s, whose records are by the tree's URL ids: the node cannot use them without it (it refuses to start, or takes an old scheduler for a new crawl's); put back its urls/ (kspider check --data %s then holds the rest to it)\n",
			dir, filepath.Join(dir, "urls"), strings.Join(byID, " and "), dir)
		total++
		rep.keep("urls", "put back its urls/", 1)
	}
	return total, rep.kept, nil
}

// nodeParts are the subdirectories of a node's data directory that
// check looks in for its parts' files.
func nodeParts() []string { return []string{"urls", "pages", "sched", "comm"} }

// partOf returns the node's data directory among dirs (the --data given)
// of which dir is a part: one of its nodeParts, or a page store directory
// its STORES names. Checked with the node's, and again on its own, its
// problems were counted twice (and repaired twice), and a part checked
// first, with no URL tree to hold it to, was then skipped as checked.
// Directories are compared as files, whatever path names them; two that
// are each other's part (links) are both checked.
func partOf(dir string, dirs []string) (string, bool) {
	for _, node := range dirs {
		if isPartOf(dir, node) && !isPartOf(node, dir) {
			return node, true
		}
	}
	return "", false
}

// isPartOf reports whether dir is a part's directory of node, a node's
// data directory other than dir.
func isPartOf(dir, node string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	if ni, err := os.Stat(node); err != nil || os.SameFile(ni, fi) || !isNodeDir(node) {
		return false
	}
	var parts []string
	for _, sub := range nodeParts() {
		parts = append(parts, filepath.Join(node, sub))
	}
	if stores, err := spider.ReadStoreDirs(node); err == nil {
		parts = append(parts, stores...)
	}
	for _, p := range parts {
		if pi, err := os.Stat(p); err == nil && os.SameFile(pi, fi) {
			return true
		}
	}
	return false
}

// isNodeDir reports whether dir is a node's data directory (what 'kspider
// run --dir' is given), which holds its parts in subdirectories, rather
// than the directory of one part.
func isNodeDir(dir string) bool {
	for _, sub := range nodeParts() {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func checkerNames() string {
	var names []string
	for _, c := range checkers(&treeID{}) {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}
