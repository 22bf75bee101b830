package spider

// A cluster node's record of its crawl's end and losses. A node started
// after the crawl ended learns so from its record or its peers' hellos
// (node_cluster_late.go). Its losses (a peer back with a new data
// directory; URLs taken before a peer's hello under a block that gives
// them other owners) make its run exit 3 once the crawl is over: the union of the
// stores is short of the web. They were kept in memory only, so a node
// restarted after seeing one (a crash, systemd, a reboot) forgot it and
// its run ended 0 as if the crawl were complete. So they are kept in
// DIR/CLUSTER, written when one is seen, read at every start.
//
// A peer is seen back with a new directory by its hello under a new
// communicator epoch. The epochs hellos were taken under are kept here
// too, and written with the loss in one write: the communicator saves a
// peer's epoch on its own (each second, at close) as soon as a datagram
// shows it, and a node stopped (kill -9 or not) before its writer took
// the peer's hello compared the hello, after its restart, with that
// epoch and forgot the loss.
//
// URLs of a peer taken before its hello (more than unheardHoldMax
// batches of them) are acknowledged, and its hello may come only to the
// node's next run: their count is kept here too, written before they are
// acknowledged, until a hello says whether they are lost (lost_urls) or
// not. Kept in memory only, it was forgotten by a node stopped between.
//
// On disk, DIR/CLUSTER (version 3) is lines of text:
//
//	kspider cluster 3
//	over                   (the crawl was over, and nothing came since)
//	lost_dir 2             (one line per peer back with a new directory)
//	lost_urls 1 512        (per peer: the URLs taken unheard, in all)
//	heard 1 123456789      (per peer: the communicator epoch of its last hello taken)
//	unheard 1 70           (per peer: URLs taken before a hello not yet come)
//	crc32c 1a2b3c4d
//
// Peers in increasing order, each kind's lines together, in that order.
// Earlier versions are still read, and the file is written as version 3
// from then on: version 2 had no unheard lines, version 1 no heard lines
// either (a peer's epoch then comes from the communicator's state until
// its next hello is taken).
// The CRC-32C (Castagnoli) covers the lines before it. It is written to a
// temporary name, fsynced and renamed (writeDirFile). A directory without
// the file has seen no loss. A damaged one is refused: read as empty it
// would hide the losses it records.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ClusterFile is the name of a cluster node's record of its losses in its
// data directory.
const ClusterFile = "CLUSTER"

// clusterRecord is what DIR/CLUSTER holds.
type clusterRecord struct {
	// over: the crawl was over (this node heard "finished", or was node
	// 0 and sent it, or stopped as one started after the end), and this
	// node has had nothing to do since (node_cluster_late.go).
	over     bool
	lostDirs map[int]bool   // peers back with a new data directory
	taken    map[int]uint64 // per peer: URLs taken before its hello, its block giving other owners
	heard    map[int]uint64 // per peer: the communicator epoch of its last hello taken
	unheard  map[int]uint64 // per peer: URLs taken (acknowledged) before its hello, not yet come
}

// clusterRecordMagic is the first line of DIR/CLUSTER of version v.
func clusterRecordMagic(v int) string { return fmt.Sprintf("kspider cluster %d\n", v) }

// clusterRecordVersion is the version written.
const clusterRecordVersion = 3

func emptyClusterRecord() clusterRecord {
	return clusterRecord{lostDirs: map[int]bool{}, taken: map[int]uint64{}, heard: map[int]uint64{}, unheard: map[int]uint64{}}
}

// clusterRecordMax bounds the file read: a line per peer and kind.
const clusterRecordMax = 1 << 20

func (r clusterRecord) encode() []byte { return r.encodeVersion(clusterRecordVersion) }

// encodeVersion encodes r as version v (2: without its unheard lines,
// 1: without its heard lines either).
func (r clusterRecord) encodeVersion(v int) []byte {
	b := []byte(clusterRecordMagic(v))
	if r.over {
		b = append(b, "over\n"...)
	}
	for _, id := range slices.Sorted(maps.Keys(r.lostDirs)) {
		b = fmt.Appendf(b, "lost_dir %d\n", id)
	}
	for _, id := range slices.Sorted(maps.Keys(r.taken)) {
		b = fmt.Appendf(b, "lost_urls %d %d\n", id, r.taken[id])
	}
	if v >= 2 {
		for _, id := range slices.Sorted(maps.Keys(r.heard)) {
			b = fmt.Appendf(b, "heard %d %d\n", id, r.heard[id])
		}
	}
	if v >= 3 {
		for _, id := range slices.Sorted(maps.Keys(r.unheard)) {
			b = fmt.Appendf(b, "unheard %d %d\n", id, r.unheard[id])
		}
	}
	return append(b, dirFileSum(b)...)
}

// decodeClusterRecord parses b, of version 1, 2 or 3; it is the record only
// if encoding the result in its version gives b again (order, CRC and
// all).
func decodeClusterRecord(b []byte) (clusterRecord, bool) {
	r := emptyClusterRecord()
	v := 0
	var body []byte
	for try := 1; try <= clusterRecordVersion; try++ {
		if rest, ok := bytes.CutPrefix(b, []byte(clusterRecordMagic(try))); ok {
			v, body = try, rest
		}
	}
	if v == 0 {
		return r, false
	}
	lines := strings.SplitAfter(string(body), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "" {
		return r, false
	}
	for i, l := range lines[:len(lines)-2] {
		if l == "over\n" && i == 0 {
			r.over = true
			continue
		}
		f := strings.Fields(l)
		id := -1
		if len(f) >= 2 {
			if v, err := strconv.Atoi(f[1]); err == nil && v >= 0 {
				id = v
			}
		}
		switch {
		case id < 0:
			return r, false
		case f[0] == "lost_dir" && len(f) == 2:
			r.lostDirs[id] = true
		case f[0] == "lost_urls" && len(f) == 3:
			k, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return r, false
			}
			r.taken[id] = k
		case f[0] == "heard" && len(f) == 3 && v >= 2:
			e, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil || e == 0 {
				return r, false
			}
			r.heard[id] = e
		case f[0] == "unheard" && len(f) == 3 && v >= 3:
			k, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil || k == 0 {
				return r, false
			}
			r.unheard[id] = k
		default:
			return r, false
		}
	}
	return r, bytes.Equal(r.encodeVersion(v), b)
}

// readClusterRecord reads dir's CLUSTER (empty when there is none) and
// names the file when it is damaged.
func readClusterRecord(dir string) (clusterRecord, error) {
	path := filepath.Join(dir, ClusterFile)
	empty := emptyClusterRecord()
	const hint = "it records the peers' shares this node saw lost, which make its run exit 3 once the crawl is over; deleting it forgets them"
	b, err := readDirFile(dir, ClusterFile, clusterRecordMax)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return empty, nil
	case errors.Is(err, errNotRegular):
		return empty, fmt.Errorf("spider: %s is %v: %s", path, err, hint)
	case err != nil:
		return empty, fmt.Errorf("spider: %w", err)
	}
	if err := dirFileNewer(path, b, "kspider cluster ", clusterRecordVersion); err != nil {
		return empty, fmt.Errorf("spider: %w", err)
	}
	r, ok := decodeClusterRecord(b)
	if !ok || len(b) > clusterRecordMax {
		return empty, fmt.Errorf("spider: %s is damaged (%d bytes, not as kspider writes it): %s", path, len(b), hint)
	}
	return r, nil
}

// openRecord reads the losses this node saw in earlier runs (openCluster).
func (c *nodeCluster) openRecord() error {
	r, err := readClusterRecord(c.n.cfg.Dir)
	if err != nil {
		return err
	}
	c.rec = r
	for id := range r.lostDirs {
		c.lost[id] = lostDirMsg(id)
	}
	for id, k := range r.taken {
		c.taken[id] = takenMsg(id, k)
	}
	for id, k := range r.unheard {
		// Taken in an earlier run, its hello not yet come: as if taken
		// in this one.
		h := c.hold(id)
		h.early, h.recorded, h.released = k, k, true
	}
	return nil
}

// recordUnheard records the URLs taken from peers not yet heard from
// (past unheardHoldMax batches), before they are acknowledged (writer
// only, syncCluster): once they are, nothing sends them again, and the
// peer's hello may come only to the next run.
func (c *nodeCluster) recordUnheard() {
	due := map[int]uint64{}
	for id, h := range c.holds {
		if h.released && !h.heard && h.early != h.recorded {
			due[id] = h.early
		}
	}
	if len(due) == 0 {
		return
	}
	c.updateRecord(func(r *clusterRecord) { maps.Copy(r.unheard, due) })
	for id, k := range due {
		c.holds[id].recorded = k
	}
}

// updateRecord applies f to the record and writes it; a failure stops
// the node, which would otherwise forget at its next start what it saw.
// It returns the record as written.
func (c *nodeCluster) updateRecord(f func(*clusterRecord)) clusterRecord {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	f(&c.rec)
	if err := writeDirFile(c.n.cfg.Dir, ClusterFile, c.rec.encode()); err != nil {
		c.n.fail(fmt.Errorf("spider: recording the cluster's end or a peer's lost share in %s: %w", filepath.Join(c.n.cfg.Dir, ClusterFile), err))
	}
	return c.rec
}

func lostDirMsg(id int) string {
	return fmt.Sprintf("node %d came back with a new data directory: the URLs it held (those sent to it and acknowledged before, and its pages' links) are lost with its old one and are crawled only if found again", id)
}

func takenMsg(id int, k uint64) string {
	return fmt.Sprintf("node %d's cluster block gives URLs other owners than ours, and %d URLs it sent before its hello (more than %d batches waited for it) were taken under ours: those another node owns by our block were dropped (misrouted), the rest are in this directory; some are lost whichever block is fixed, and crawled only if found again",
		id, k, unheardHoldMax)
}

// CheckClusterFile reads dir's CLUSTER as a node's start does, for
// kspider check: an error matching fs.ErrNotExist when there is none, one
// naming the file when it is damaged (the start refuses it), else what
// it records, in words.
func CheckClusterFile(dir string) (string, error) {
	if _, err := os.Lstat(filepath.Join(dir, ClusterFile)); err != nil {
		return "", err
	}
	r, err := readClusterRecord(dir)
	if err != nil {
		return "", err
	}
	var says []string
	if r.over {
		says = append(says, "the crawl was over")
	}
	for _, id := range slices.Sorted(maps.Keys(r.lostDirs)) {
		says = append(says, fmt.Sprintf("node %d came back with a new data directory", id))
	}
	for _, id := range slices.Sorted(maps.Keys(r.taken)) {
		says = append(says, fmt.Sprintf("%d URLs of node %d taken before its hello under a block giving other owners", r.taken[id], id))
	}
	for _, id := range slices.Sorted(maps.Keys(r.unheard)) {
		says = append(says, fmt.Sprintf("%d URLs of node %d taken before its hello, which has not come yet", r.unheard[id], id))
	}
	if len(says) == 0 {
		return "nothing recorded", nil
	}
	return strings.Join(says, "; "), nil
}
