package spider

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kspider/kspider/scheduler"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/urltree"
)

// DirIdentity says whose share of the URLs a data directory holds: the
// node's id, the number of nodes and the partitioning, fixed at the
// directory's first run. A URL's owner follows from them, so a directory
// opened as another node, or under another node count or partitioning,
// would fetch URLs another node owns (stored twice) and orphan the links
// its spill files keep for its peers (lost): OpenNode refuses it.
//
// On disk, DIR/IDENTITY (version 1) is three lines of text:
//
//	kspider data directory 1
//	node 0 of 4, partition url
//	crc32c 1a2b3c4d
//
// The CRC-32C (Castagnoli, 8 hex digits) covers the bytes of the two lines
// before it, newlines included. A node alone is "node 0 of 1, partition
// none". The file is written once, to a temporary name, fsynced and renamed.
type DirIdentity struct {
	Node, Nodes int
	Partition   string // cluster.Partition's name; "none" for a node alone
}

// IdentityFile is the name of the identity file in a data directory.
const IdentityFile = "IDENTITY"

// treeSubdir is the URL tree's directory in a data directory.
const treeSubdir = "urls"

// newTree reports whether dir holds no URL tree yet.
func newTree(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, treeSubdir))
	return errors.Is(err, fs.ErrNotExist)
}

// maxIdentitySize bounds what ReadDirIdentity reads of the file.
const maxIdentitySize = 4096

// identityHeader is the first line's text before the version number.
const identityHeader = "kspider data directory "

func (id DirIdentity) String() string {
	if id.Nodes <= 1 {
		return "a node alone"
	}
	return fmt.Sprintf("node %d of %d, partition %s", id.Node, id.Nodes, id.Partition)
}

// sameShare reports whether a directory of identity was can be opened as
// is: the same URLs belong to it. Any single node owns every URL, whatever
// its partition.
func (id DirIdentity) sameShare(was DirIdentity) bool {
	if id.Nodes <= 1 && was.Nodes <= 1 {
		return true
	}
	return id == was
}

func (id DirIdentity) encode() []byte {
	body := fmt.Appendf(nil, "%s1\nnode %d of %d, partition %s\n", identityHeader, id.Node, id.Nodes, id.Partition)
	return append(body, dirFileSum(body)...)
}

// parseIdentity reads an IDENTITY file's bytes.
func parseIdentity(b []byte) (DirIdentity, error) {
	var id DirIdentity
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) != 4 || len(lines[3]) != 0 {
		return id, fmt.Errorf("%d bytes that are not three lines", len(b))
	}
	// The checksum first: a damaged version digit is damage, not a
	// version this build does not know.
	body := b[:len(lines[0])+len(lines[1])]
	if want := dirFileSum(body); string(lines[2]) != want {
		return id, fmt.Errorf("third line %q, but the lines before it sum to %q", lines[2], want)
	}
	version, ok := bytes.CutPrefix(bytes.TrimSuffix(lines[0], []byte("\n")), []byte(identityHeader))
	if !ok {
		return id, fmt.Errorf("first line %q is not %q and a version", lines[0], identityHeader)
	}
	if v, err := strconv.Atoi(string(version)); err != nil || v != 1 {
		return id, fmt.Errorf("version %q; this kspider reads version 1", version)
	}
	if _, err := fmt.Sscanf(string(lines[1]), "node %d of %d, partition %s\n", &id.Node, &id.Nodes, &id.Partition); err != nil ||
		id.Nodes < 1 || id.Node < 0 || id.Node >= id.Nodes {
		return id, fmt.Errorf("second line %q is not \"node I of N, partition P\"", lines[1])
	}
	if !bytes.Equal(id.encode(), b) { // one spelling only, as written
		return id, fmt.Errorf("second line %q is not as kspider writes it", lines[1])
	}
	return id, nil
}

// ErrIdentityDamaged is matched (errors.Is) by ReadDirIdentity's error for
// a file that is there but not as kspider writes it.
var ErrIdentityDamaged = errors.New("damaged")

// ReadDirIdentity reads dir's IDENTITY; the error matches fs.ErrNotExist
// when there is none, and names the file and what is wrong when it is
// damaged.
func ReadDirIdentity(dir string) (DirIdentity, error) {
	path := filepath.Join(dir, IdentityFile)
	// The file is a few dozen bytes: a larger one is damage, not read whole.
	b, err := readDirFile(dir, IdentityFile, maxIdentitySize)
	if errors.Is(err, errNotRegular) {
		return DirIdentity{}, fmt.Errorf("%s is %w: %v", path, ErrIdentityDamaged, err)
	}
	if err != nil {
		return DirIdentity{}, err
	}
	if err := dirFileNewer(path, b, identityHeader, 1); err != nil {
		return DirIdentity{}, err
	}
	id, err := parseIdentity(b)
	if err != nil {
		return id, fmt.Errorf("%s is %w: %v", path, ErrIdentityDamaged, err)
	}
	return id, nil
}

// checkIdentity compares dir's IDENTITY with want and records want when
// the directory has none. A directory with a URL tree but no IDENTITY
// (written before kspider kept one) is recorded as want with a note
// through logf, as nothing tells whose share it held.
func checkIdentity(dir string, want DirIdentity, logf func(string, ...any)) error {
	path := filepath.Join(dir, IdentityFile)
	was, err := ReadDirIdentity(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fresh := newTree(dir)
		if !fresh {
			if u, owner := foreignURL(dir, want); u != "" {
				return fmt.Errorf("spider: data directory %s has no %s, and its URL tree holds %q, which node %d owns, not this run's %s: it is another node's directory (a node's tree holds only the URLs it owns). Run each node on its own directory; if this is the directory of node %d, run that node on it",
					dir, IdentityFile, u, owner, want, owner)
			}
		}
		if err := writeIdentity(dir, want); err != nil {
			return err
		}
		if !fresh {
			logf("spider: %s recorded as %s: the directory predates the file, so whose share it held cannot be checked", path, want)
		}
		return nil
	case errors.Is(err, ErrIdentityDamaged):
		return fmt.Errorf("spider: %w: if the directory is %s's, delete the file and it is recorded anew", err, want)
	case err != nil:
		return fmt.Errorf("spider: %w", err)
	}
	if !want.sameShare(was) {
		return fmt.Errorf("spider: data directory %s holds the share of %s; this run is %s. Which URLs a node owns follows from its id, the number of nodes and the partition: run each node on the directory of its own share; a new layout needs new directories",
			dir, was, want)
	}
	return nil
}

// maxOwnerCheck bounds the URLs foreignURL looks at: in another node's
// tree all but one in N are foreign.
const maxOwnerCheck = 10000

// foreignURL returns a URL among the first of dir's URL tree that a
// cluster node of identity id does not own, and its owner; "" when there
// is none, or the tree cannot be read (opening it for the crawl then says
// why). A node's links to URLs other nodes own go to them, so its own
// tree holds its URLs only: one that does not is another node's
// directory, for a directory with no IDENTITY to tell.
func foreignURL(dir string, id DirIdentity) (string, int) {
	by, err := cluster.ParsePartition(id.Partition)
	if id.Nodes <= 1 || err != nil {
		return "", 0
	}
	t, err := urltree.Open(filepath.Join(dir, treeSubdir), &urltree.Options{ReadOnly: true})
	if err != nil {
		return "", 0
	}
	defer t.Close()
	p := cluster.Partitioner{By: by, Nodes: id.Nodes}
	seen := 0
	for _, u := range t.ByID() {
		if o := p.Owner(string(u)); o != id.Node {
			return string(u), o
		}
		if seen++; seen == maxOwnerCheck {
			break
		}
	}
	return "", 0
}

func writeIdentity(dir string, id DirIdentity) error {
	return writeDirFile(dir, IdentityFile, id.encode())
}

// dirFileSum is the last line of every small file the node keeps in its
// data directory (IDENTITY, DEPTH, SCOPE, STORES, CLUSTER): the CRC-32C
// of the lines before it.
func dirFileSum(body []byte) string {
	return fmt.Sprintf("crc32c %08x\n", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

var errNotRegular = errors.New("not a regular file")

// readDirFile reads the small file name of dir (IDENTITY, DEPTH, SCOPE,
// STORES, CLUSTER), at most maxSize+1 bytes: more than maxSize is damage,
// which its caller names, and is not read whole. The error matches
// fs.ErrNotExist when there is none, and errNotRegular when it is not a
// regular file: a FIFO put there would block the open, and the run, for
// good (a device would be read as the file).
func readDirFile(dir, name string, maxSize int64) ([]byte, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (a %v)", errNotRegular, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

// dirFileIntact reports whether b, a small file of a data directory, ends
// with the checksum line of the lines before it: only then may a reader
// take a first line it does not know for a newer version, not damage.
func dirFileIntact(b []byte) bool {
	body, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return false
	}
	i := bytes.LastIndexByte(body, '\n') + 1
	return string(b[i:]) == dirFileSum(b[:i])
}

// dirFileNewer returns the error refusing b, the small file path of a
// data directory, when it is intact and its first line is prefix and a
// version above newest: said damaged, a rollback to an older kspider had
// the operator delete what the newer one recorded. Otherwise nil.
func dirFileNewer(path string, b []byte, prefix string, newest int) error {
	if !dirFileIntact(b) {
		return nil
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	version, ok := bytes.CutPrefix(first, []byte(prefix))
	if !ok {
		return nil
	}
	if v, err := strconv.Atoi(string(version)); err == nil && v > newest {
		return fmt.Errorf("%s was written by a newer kspider (format version %d; this kspider reads versions ≤ %d): run the kspider that wrote it", path, v, newest)
	}
	return nil
}

// writeDirFile writes a small file of a data directory whole: to a
// temporary name, fsynced, renamed, and the directory fsynced.
func writeDirFile(dir, name string, b []byte) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	// Made anew: one left there (a crash) may be a link to another file,
	// which writing through would overwrite.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("spider: %w", err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("spider: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(dir); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("spider: recording %s: %w", path, err)
	}
	return nil
}

// identity is the share of the URLs a node of cfg owns.
func (cfg *NodeConfig) identity() DirIdentity {
	if cfg.Cluster == nil {
		return DirIdentity{Nodes: 1, Partition: "none"}
	}
	c := &cfg.Cluster.Config
	return DirIdentity{Node: c.Self, Nodes: c.N(), Partition: c.Partition.String()}
}

// checkNewTreeStore refuses a data directory whose URL tree is new (not
// created yet) with a page store that holds pages: URL ids are the tree's,
// so the store is another crawl's (storage.dirs left over, or the tree
// deleted). Written into, it would hold records of other URLs under the
// new crawl's ids, and after a crash a URL would count as stored because
// its id has another URL's page.
//
// So is one whose STORES names directories that held pages: the crawl
// that wrote it had a tree, so the directory is copied in part or not the
// one meant (--dir), and those directories may be disks not mounted here,
// which the check above cannot see. Started, the node recorded STORES
// anew, the list of the old crawl's disks lost, and with it the refusal
// of a start where one of them holds no pages.
func checkNewTreeStore(dir string, storageDirs []string) error {
	if !newTree(dir) {
		return nil
	}
	switch held, err := ReadStoreDirs(dir); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case len(held) > 0:
		file := filepath.Join(dir, StoresFile)
		return fmt.Errorf("spider: %s names page store directories that held pages of a crawl (%s), but %s has no URL tree (%s/): the data directory is copied in part, or not the one meant; that crawl's pages are keyed by its tree's URL ids. Put back its %s/ and sched/, or, to start a new crawl here, delete %s",
			file, strings.Join(held, ", "), dir, treeSubdir, treeSubdir, file)
	}
	for _, sd := range storageDirs {
		held, err := storage.HoldsPages(sd)
		if err != nil {
			return fmt.Errorf("spider: %w", err)
		}
		if held {
			return fmt.Errorf("spider: page store %s holds pages, but the URL tree in %s is new: the store is another crawl's (page records are keyed by the tree's URL ids); give this crawl empty storage directories, or run on the data directory the store belongs to", sd, dir)
		}
	}
	return nil
}

// checkStoreGone refuses a data directory whose scheduler has pages
// stored (completed or redirected: reported only once their page was
// durable) while no page store directory holds a page: the store was
// removed, or its disk is not mounted (storage.dirs on an empty mount
// point). Opened, the store was made anew, every page was done, and the
// run "finished" at once with nothing on disk, exit 0. It runs before
// the store is opened.
func checkStoreGone(dir string, storageDirs []string, sched *scheduler.Scheduler) error {
	st := sched.Stats(0).States
	stored := st[scheduler.Completed] + st[scheduler.Redirected]
	if stored == 0 {
		return nil
	}
	for _, sd := range storageDirs {
		held, err := storage.HoldsPages(sd)
		if err != nil {
			return fmt.Errorf("spider: %w", err)
		}
		if held {
			return nil
		}
	}
	return fmt.Errorf("spider: the crawl in %s has %d pages stored, but its page store (%s) holds none: the store was removed, or its disk is not mounted; mount or restore it (to crawl anew, use an empty data directory)", dir, stored, strings.Join(storageDirs, ", "))
}
