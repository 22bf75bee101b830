package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/urltree"
)

// checkSched is the scheduler's checker for kspider check:
// scheduler.CheckFor the URL tree checkTree found (a scheduler of another
// tree is damage, as Open refuses it; one from before format version 3,
// without an ID, is held to the tree's hosts as the node's Open holds it),
// printed one finding per line with its file and offset.
func (tree *treeID) checkSched(dir string, repair bool, w io.Writer) (problems int, err error) {
	hosts := &treeHosts{dir: tree.dir}
	defer hosts.close()
	var hostOf func(uint32) (string, bool)
	if tree.found {
		hostOf = hosts.hostOf
	}
	rep, err := scheduler.CheckFor(dir, repair, tree.id, tree.file, hostOf)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if rep == nil {
		return 0, err
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "sched: %s\n", f)
		if f.Damage {
			problems++
		}
	}
	switch {
	case problems == 0:
		fmt.Fprintf(w, "sched: %s: ok: %d URL records, %d hosts%s\n", dir, rep.URLs, rep.Hosts, tree.uncompared(dir, rep, hosts.err))
	case rep.Newer:
		// Its repair refuses them: pointing at --repair, as for damage,
		// sent the operator to a repair that could not run.
		fmt.Fprintf(w, "sched: %s: files of a newer format version (named above): check them with the kspider that wrote them; this one neither reads nor repairs them\n", dir)
	case len(rep.Foreign) > 0:
		fmt.Fprintf(w, "sched: %s: %d problems; %s of another URL tree (named above): no repair mixes two data directories' files; put back the ones that belong together\n", dir, problems, strings.Join(rep.Foreign, ", "))
	case rep.Repaired && rep.Salvaged > 0:
		fmt.Fprintf(w, "sched: %s: repaired: %d damaged URL records replaced by gaps, everything else kept (the damaged file is copied in %s); the node adds those URLs again when it meets them\n",
			dir, rep.Salvaged, rep.Quarantine)
	case rep.Repaired && rep.CommitLost:
		fmt.Fprintf(w, "sched: %s: repaired: no commit could be read, so sched.meta is written anew with an empty one (the damaged meta file, if any, is copied in %s); the next start reads the other files as after a crash and says what it could not keep\n",
			dir, rep.Quarantine)
	case rep.Repaired && rep.MetaRewritten:
		fmt.Fprintf(w, "sched: %s: repaired: the commit slots are written anew from the valid one, everything else kept (the damaged meta file is copied in %s)\n",
			dir, rep.Quarantine)
	case rep.Repaired && rep.HeadersRewritten > 0:
		// Only headers, rebuilt from the others' (scheduler.Check): saying
		// the files were moved away, the scheduler to start empty, sent
		// an operator to recover what was never lost.
		headers := "header"
		if rep.HeadersRewritten > 1 {
			headers = "headers"
		}
		fmt.Fprintf(w, "sched: %s: repaired: %d damaged file %s written anew from the other files' (the damaged files are copied in %s), every record kept\n",
			dir, rep.HeadersRewritten, headers, rep.Quarantine)
	case rep.Repaired:
		fmt.Fprintf(w, "sched: %s: repaired: the damaged files are in %s; the next start creates an empty scheduler, and the node must add its URLs again from the URL tree (which were fetched and the hosts' politeness and robots state are lost)\n",
			dir, rep.Quarantine)
	default:
		fmt.Fprintf(w, "sched: %s: %d problems; kspider check --repair replaces damaged URL records by gaps, or, with damage elsewhere, moves its files into %s/damaged/ (URL states cannot be rebuilt)\n", dir, problems, dir)
	}
	return problems, err
}

// uncompared is what the ok line adds when the scheduler was not held to
// a URL tree: --data DIR/sched has no tree beside it to compare with, and
// a plain "ok" read as if the two belonged together (a sched/ of another
// data directory, which the node refuses, said ok). A scheduler that
// records no ID is held to the tree's hosts instead (hostsErr: the tree
// could not be opened for them).
func (tree *treeID) uncompared(dir string, rep *scheduler.CheckReport, hostsErr error) string {
	if rep.TreeID == ([16]byte{}) {
		switch {
		case !rep.Compared:
			return "; records no URL tree, and was not compared with one's URLs" + besideTree(dir)
		case hostsErr != nil:
			return fmt.Sprintf("; records no URL tree, and was not compared with its URLs: %v", hostsErr)
		}
		return ""
	}
	switch {
	case !tree.found:
		return "; not compared with a URL tree" + besideTree(dir)
	case tree.id.IsZero():
		return "; not compared with the URL tree, which records no ID (format version 2, or its headers are damaged)"
	}
	return ""
}

// besideTree says where the URL tree to hold the scheduler in dir to is:
// the data directory above, when it holds one. Said of a data directory
// with no urls/, given itself, the hint sent the operator to run the
// same check again.
func besideTree(dir string) string {
	node := filepath.Dir(dir)
	if fi, err := os.Stat(filepath.Join(node, "urls")); err != nil || !fi.IsDir() {
		return " (there is none beside it)"
	}
	return fmt.Sprintf(" (none checked here; kspider check --data %s checks the data directory's two together)", node)
}

// treeHosts opens the URL tree in dir read-only when the scheduler check
// first asks for a host (only a scheduler without an ID is held to the
// tree's hosts), and gives the node's host function over it
// (spider.SchedHostOf). err is why the tree could not be opened: every
// host is then unknown.
type treeHosts struct {
	dir    string
	tree   *urltree.Tree
	hosts  func(uint32) (string, bool)
	err    error
	opened bool
}

func (h *treeHosts) hostOf(id uint32) (string, bool) {
	if !h.opened {
		h.opened = true
		if h.tree, h.err = urltree.Open(h.dir, &urltree.Options{ReadOnly: true}); h.err == nil {
			h.hosts = spider.SchedHostOf(h.tree)
		}
	}
	if h.hosts == nil {
		return "", false
	}
	return h.hosts(id)
}

func (h *treeHosts) close() {
	if h.tree != nil {
		h.tree.Close()
	}
}
