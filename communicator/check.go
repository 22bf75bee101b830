package communicator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNoSpill is CheckSpill's error for a directory that holds neither
// spill files nor a state file; it wraps fs.ErrNotExist.
var ErrNoSpill = fmt.Errorf("communicator: no spill files (spill-<self>-<peer>) or state file: %w", fs.ErrNotExist)

// SpillFinding is one thing CheckSpill found, in which file and at which offset.
// (urltree.Finding and scheduler.Finding have the same shape: each part reports in
// the words kspider check prints, without a package of its own for it.)
type SpillFinding struct {
	File   string
	Offset int64
	What   string
	// Damage is false for what a crash leaves behind and the part's own
	// open handles without losing anything committed.
	Damage bool
}

func (f SpillFinding) String() string {
	kind := "note"
	if f.Damage {
		kind = "damage"
	}
	return fmt.Sprintf("%s: %s: offset %d: %s", kind, f.File, f.Offset, f.What)
}

func anyDamage(fs []SpillFinding) bool {
	for _, f := range fs {
		if f.Damage {
			return true
		}
	}
	return false
}

// SpillFileReport is what CheckSpill found in one spill file.
type SpillFileReport struct {
	Path       string
	Self, Peer NodeID
	// Version is the file's format version (spill.go; 0: no header that
	// says): 1 is read as written, and becomes 2 once emptied or rewritten.
	Version     uint16
	Size        int64
	Good        int64 // end of the last intact record
	Items       int   // item records before Good
	Deliverable int   // of those, items not yet acknowledged (after the last mark)
	Skipped     int64 // bytes in damaged or torn stretches the reader skips
	Regions     int   // such stretches
}

// SpillReport is what CheckSpill found in a spill directory.
type SpillReport struct {
	Dir   string
	Files []SpillFileReport
	State bool // a state file is there
	// StateNode is the node that wrote the state file, when it says
	// (StateNodeKnown: format version 3 on).
	StateNode      NodeID
	StateNodeKnown bool
	Findings       []SpillFinding
	// stateFrom is the nodes the state file holds receive positions for
	// (batches from them).
	stateFrom map[NodeID]bool
}

// Damaged reports whether any finding is damage.
func (r *SpillReport) Damaged() bool { return anyDamage(r.Findings) }

// Deliverable is the number of items still to deliver over all files.
func (r *SpillReport) Deliverable() int {
	n := 0
	for _, f := range r.Files {
		n += f.Deliverable
	}
	return n
}

// Skipped returns the damaged or torn bytes the readers skip over all
// files, and in how many stretches.
func (r *SpillReport) Skipped() (bytes int64, regions int) {
	for _, f := range r.Files {
		bytes += f.Skipped
		regions += f.Regions
	}
	return bytes, regions
}

// CheckSpill verifies the spill files and the receive-state file of an
// endpoint's SpillDir without changing anything, with the same readers the
// endpoint uses when it starts, one of the default Payload (a cluster
// node's): an item longer than such an endpoint sends is damage, as its
// open skips it (an endpoint of a larger Payload wrote it; counted
// deliverable before, it was never delivered). A spill file has no commit record, so a
// record cut short at the very end is taken for a write a crash
// interrupted (a note); any other bad record is damage, one finding per
// damaged stretch (the first spillDescribed and a damaged tail; one
// finding sums up the rest), and the reader skips exactly that stretch: the intact
// records after it are counted as deliverable as the endpoint delivers
// them. A directory with none of the files is ErrNoSpill.
func CheckSpill(dir string) (*SpillReport, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoSpill, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	rep := &SpillReport{Dir: dir}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	found := false
	for _, name := range names {
		path := filepath.Join(dir, name)
		var self, peer NodeID
		switch {
		case name == "state":
			found, rep.State = true, true
			if err := checkStateFile(path, rep); err != nil {
				return nil, err
			}
		case name == "state.tmp":
			found = true
			rep.note(path, 0, "a state file a crash left unfinished; the endpoint keeps using state")
		case strings.HasPrefix(name, "spill-") && strings.HasSuffix(name, ".tmp"):
			found = true
			rep.note(path, 0, "a rewrite of a spill file a crash cut short (spillcompact.go); the spill file is whole without it, and the endpoint removes it")
		case strings.HasPrefix(name, "spill-") && strings.Contains(name, ".bad-"):
			found = true
			rep.note(path, 0, "the damaged tail an earlier start kept aside; not delivered")
		case parseSpillName(name, &self, &peer):
			found = true
			if err := checkSpillFile(path, self, peer, rep); err != nil {
				return nil, err
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%w in %s", ErrNoSpill, dir)
	}
	if rep.StateNodeKnown {
		for _, f := range rep.Files {
			if f.Self != rep.StateNode {
				// One node's endpoint refuses the state file, the
				// other never opens the spill file.
				rep.Findings = append(rep.Findings, SpillFinding{File: f.Path, Damage: true,
					What: fmt.Sprintf("a spill file of node %d beside the state file of node %d: the directory holds two nodes' files; node %d refuses this state file, node %d never sends this file's items", f.Self, rep.StateNode, f.Self, rep.StateNode)})
			}
		}
	} else if rep.State {
		for _, f := range rep.Files {
			if rep.stateFrom[f.Self] {
				// An older state file names no node; a node never
				// receives from itself (openState).
				rep.Findings = append(rep.Findings, SpillFinding{File: f.Path, Damage: true,
					What: fmt.Sprintf("a spill file of node %d beside a state file holding a receive position for batches from node %d: another node wrote the state file (its format names no node); node %d refuses it", f.Self, f.Self, f.Self)})
			}
		}
	}
	return rep, nil
}

func (r *SpillReport) note(file string, off int64, what string) {
	r.Findings = append(r.Findings, SpillFinding{File: file, Offset: off, What: what})
}

func parseSpillName(name string, self, peer *NodeID) bool {
	if _, err := fmt.Sscanf(name, "spill-%d-%d", self, peer); err != nil {
		return false
	}
	return name == filepath.Base(spillPath("", *self, *peer))
}

func checkSpillFile(path string, self, peer NodeID, rep *SpillReport) error {
	f, fi, err := openRegular(path)
	if err != nil {
		return fmt.Errorf("communicator: %w", err)
	}
	defer f.Close()
	sc, hdr, scanErr := scanSpillHeaderless(f, fi.Size(), self, peer, MaxItemLen(DefaultPayload), 0)
	if hdr != nil {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Damage: true, What: headerLostText(&sc)})
	}
	fr := SpillFileReport{Path: path, Self: self, Peer: peer, Size: fi.Size(), Good: sc.good, Items: sc.items, Deliverable: sc.unread}
	fr.Skipped, fr.Regions = sc.skipped()
	if scanErr == nil || errors.Is(scanErr, errSpillNewer) {
		fr.Version = sc.version
	}
	rep.Files = append(rep.Files, fr)
	if errors.Is(scanErr, errSpillUnwritten) {
		return nil // nothing in it, nothing lost: the endpoint writes its header, as its open says nothing
	}
	if errors.Is(scanErr, errSpillNewer) {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: 4, Damage: true,
			What: fmt.Sprintf("%v; the endpoint refuses to start on it", scanErr)})
		return nil
	}
	if scanErr != nil && !errors.Is(scanErr, errSpillHeader) {
		return fmt.Errorf("communicator: spill file %s: %w", path, scanErr)
	}
	if scanErr != nil {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Damage: true,
			What: fmt.Sprintf("%v; the endpoint moves the whole file aside and delivers nothing in it", scanErr)})
		return nil
	}
	if sc.version < spillVersion {
		rep.note(path, 4, fmt.Sprintf("format version %d (an older build wrote it; its records' checksums do not bind them to their offsets, so whole records swapped read as intact): read and appended to as written; it becomes version %d once all of it is acknowledged or it is rewritten", sc.version, spillVersion))
	}
	for _, r := range sc.bad {
		switch {
		case r.why == "":
			// Counted below, with the others not described.
		case r.torn:
			rep.note(path, r.start, fmt.Sprintf("%s: a write a crash cut short; %d items before it are delivered", r.why, sc.unread))
		case r.end == fi.Size():
			rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: r.start, Damage: true,
				What: fmt.Sprintf("%s; no intact record after it: the %d bytes from there on are not delivered", r.why, r.end-r.start)})
		default:
			rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: r.start, Damage: true,
				What: fmt.Sprintf("%s; %d bytes skipped to the next intact record at offset %d", r.why, r.end-r.start, r.end)})
		}
	}
	if bytes, n := sc.undescribed(); n > 0 {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: sc.undescribedFrom, Damage: true, What: undescribedText(&sc, n, bytes)})
	}
	return nil
}

func checkStateFile(path string, rep *SpillReport) error {
	b, err := readStateFile(path)
	if errors.Is(err, errStateSize) {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Damage: true, What: err.Error()})
		return nil
	}
	if err != nil {
		return fmt.Errorf("communicator: %w", err)
	}
	s := &stateFile{entries: make(map[NodeID]stateEntry)}
	if off, err := s.parse(b); err != nil {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: off, Damage: true,
			What: fmt.Sprintf("%v; the endpoint refuses to start until it is removed, and peers may then deliver acknowledged batches again", err)})
	}
	for _, w := range s.warnings {
		rep.Findings = append(rep.Findings, SpillFinding{File: path, Offset: w.off, Damage: true, What: w.what})
	}
	rep.StateNode, rep.StateNodeKnown = s.owner, s.ownerKnown
	rep.stateFrom = make(map[NodeID]bool)
	for id := range s.entries {
		rep.stateFrom[id] = true
	}
	return nil
}

// ForeignSpillFile is a spill file in an endpoint's directory that the
// endpoint never opens: another node wrote it, or it is for a node the
// endpoint does not have as a peer.
type ForeignSpillFile struct {
	Path       string
	Self, Peer NodeID // from its name, spill-<self>-<peer>
}

// Why says why node self never delivers f's items.
func (f ForeignSpillFile) Why(self NodeID) string {
	if f.Self != self {
		return fmt.Sprintf("node %d wrote it, not node %d", f.Self, self)
	}
	return fmt.Sprintf("node %d has no peer %d", self, f.Peer)
}

// ForeignSpill lists the spill files in dir that node self, whose peers
// isPeer tells, never opens: an endpoint opens spill-<self>-<peer> by name
// for each of its peers, so another file's items are never delivered and
// would be lost without a word (a directory copied from another node, a
// cluster that lost a node). A missing dir holds none.
func ForeignSpill(dir string, self NodeID, isPeer func(NodeID) bool) ([]ForeignSpillFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	var out []ForeignSpillFile
	for _, e := range ents {
		var f ForeignSpillFile
		if !parseSpillName(e.Name(), &f.Self, &f.Peer) || (f.Self == self && f.Peer != self && isPeer(f.Peer)) {
			continue
		}
		f.Path = filepath.Join(dir, e.Name())
		out = append(out, f)
	}
	return out, nil
}
