package scheduler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoScheduler is Check's error for a directory that holds none of a
// scheduler's files; it wraps fs.ErrNotExist.
var ErrNoScheduler = fmt.Errorf("scheduler: no scheduler files (%s, %s, %s, %s): %w", metaName, statesName, hostsName, namesName, fs.ErrNotExist)

// Finding is one thing Check found, in which file and at which offset.
// (urltree.Finding and communicator.SpillFinding have the same shape: each part reports in
// the words kspider check prints, without a package of its own for it.)
type Finding struct {
	File   string
	Offset int64
	What   string
	// Damage is false for what a crash leaves behind and the part's own
	// open handles without losing anything committed.
	Damage bool
}

func (f Finding) String() string {
	kind := "note"
	if f.Damage {
		kind = "damage"
	}
	return fmt.Sprintf("%s: %s: offset %d: %s", kind, f.File, f.Offset, f.What)
}

func anyDamage(fs []Finding) bool {
	for _, f := range fs {
		if f.Damage {
			return true
		}
	}
	return false
}

// CheckReport is what Check found, and what a repair did.
type CheckReport struct {
	Dir        string
	Findings   []Finding
	URLs       uint64 // highest URL id with a record + 1
	Hosts      int    // host records read (damaged ones included)
	InProgress int    // records Open would turn back to in-list
	Dropped    int    // records past the commit whose host did not survive
	Clean      bool   // the commit says the scheduler was closed cleanly
	// Repaired is set when a repair ran. With damage only in committed
	// URL records, those Salvaged records became gaps (never added: the
	// node adds those URLs again when it meets them) and everything else
	// was kept, the damaged file copied into Quarantine first; with damage
	// only in sched.meta's commit slots, one of them still valid (which
	// Open uses), both slots were written anew from it, the old meta file
	// copied into Quarantine first; otherwise
	// all four files moved into Quarantine and the next Open starts an
	// empty scheduler.
	Repaired   bool
	Quarantine string
	Salvaged   int
	// CommitLost: neither commit slot could be read (or sched.meta was
	// gone) while the other files verified; the repair wrote sched.meta
	// anew with an empty commit, so that Open reads the files as after a
	// crash (OpenStats.Dropped counts what it cannot keep).
	CommitLost bool
	// MetaRewritten: the repair wrote sched.meta's commit slots anew from
	// its valid one and changed nothing else.
	MetaRewritten bool
	// HeadersRewritten counts the damaged file headers a repair wrote
	// anew from the others' (format version 3: the same version and ID),
	// each file copied into Quarantine first.
	HeadersRewritten int
	// TreeID is the URL tree's ID the files carry (zero before format
	// version 3), and TreeIDFile the file it was read from.
	TreeID     [16]byte
	TreeIDFile string
	// Foreign names the files of another URL tree than the rest, or than
	// CheckFor's: no repair, which would mix two schedulers' records.
	Foreign []string
	// Newer: a file is of a newer format version than this build's,
	// which neither checks nor repairs it.
	Newer bool
	// Compared: the files record no tree ID and a sample of their records
	// was held to CheckFor's hostOf, as Open holds them before it gives
	// them the tree's ID.
	Compared bool
}

// Damaged reports whether any finding is damage.
func (r *CheckReport) Damaged() bool { return anyDamage(r.Findings) }

// findings collects what the decoders find when Check runs them. A nil
// *findings is Open's mode: the first damage is the error.
type findings struct {
	list []Finding
	// listed counts each file's findings in list; past findingsListed
	// the rest are only counted, in unlisted, and summed up by done.
	listed   map[string]int
	unlisted map[string]*unlistedFindings
	order    []string // the files of unlisted, as they came
}

// findingsListed bounds the findings listed one by one per file: a file
// damaged at every record (junk written over it, 100,000 records) made a
// finding of each, many times the file's size in memory, and kspider
// check printed a line for each.
const findingsListed = 1024

// unlistedFindings are the findings of a file past findingsListed.
type unlistedFindings struct {
	n      int
	from   int64 // the first one's offset
	damage bool  // any of them is damage
}

// room reports whether a finding at off of file is listed; if not, it is
// counted for done to sum up.
func (f *findings) room(file string, off int64, damage bool) bool {
	if f.listed == nil {
		f.listed, f.unlisted = map[string]int{}, map[string]*unlistedFindings{}
	}
	if f.listed[file] < findingsListed {
		f.listed[file]++
		return true
	}
	u := f.unlisted[file]
	if u == nil {
		u = &unlistedFindings{from: off}
		f.unlisted[file] = u
		f.order = append(f.order, file)
	}
	u.n++
	u.damage = u.damage || damage
	return false
}

// done appends to the list a finding for each file's unlisted ones.
func (f *findings) done() []Finding {
	for _, file := range f.order {
		u := f.unlisted[file]
		f.list = append(f.list, Finding{File: file, Offset: u.from, Damage: u.damage,
			What: fmt.Sprintf("%d more problems from this offset on, not listed one by one (the first %d of this file are)", u.n, findingsListed)})
	}
	f.order = nil
	return f.list
}

// damage records a problem, or returns it as an ErrCorrupt error when f is
// nil (Open) so the caller stops.
func (f *findings) damage(file string, off int64, format string, args ...any) error {
	if f == nil {
		return fmt.Errorf("%w: %s: offset %d: %s", ErrCorrupt, file, off, fmt.Sprintf(format, args...))
	}
	if f.room(file, off, true) {
		f.list = append(f.list, Finding{File: file, Offset: off, What: fmt.Sprintf(format, args...), Damage: true})
	}
	return nil
}

// fatal records a problem after which the decoder cannot go on, and
// returns it as an error either way.
func (f *findings) fatal(file string, off int64, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if f != nil {
		f.list = append(f.list, Finding{File: file, Offset: off, What: what, Damage: true})
	}
	return fmt.Errorf("%w: %s: offset %d: %s", ErrCorrupt, file, off, what)
}

// leftover records a harmless crash leftover (Check only).
func (f *findings) leftover(file string, off int64, format string, args ...any) {
	if f != nil && f.room(file, off, false) {
		f.list = append(f.list, Finding{File: file, Offset: off, What: fmt.Sprintf(format, args...)})
	}
}

// Check verifies every file of the scheduler in dir without changing
// anything, with the same decoders Open uses, and reports every problem it
// can reach with its file and offset (the first findingsListed of a file
// one by one, the rest summed up in one). Without a valid commit record only
// the records' own checks are verified. A directory with none of the files
// is ErrNoScheduler.
//
// With repair, under the scheduler's lock: a damaged file header whose
// magic is intact, beside one of format version 3 that verifies, is
// written anew from it (HeadersRewritten; the file copied into
// dir/damaged/<UTC time>/ first); when all the damage is in
// committed URL records of sched.states (the commit, hosts and names
// verify), the file is copied into dir/damaged/<UTC time>/ and the
// damaged records become gaps, costing those URLs only (salvageStates).
// When neither commit slot can be read (or sched.meta is gone) while the
// other files verify, sched.meta is written anew with an empty commit,
// and Open reads the files as after a crash (CommitLost).
// Any other damage moves the four files there (never deleted): the states
// cannot be rebuilt from anything else, so the next Open starts an empty
// scheduler and the node must add its URLs again from the URL tree,
// losing which were fetched and the hosts' politeness and robots state.
func Check(dir string, repair bool) (*CheckReport, error) {
	return CheckFor(dir, repair, [16]byte{}, "", nil)
}

// CheckFor is Check of the scheduler of the URL tree whose ID is tree,
// read from treeFile (what Config.TreeID is to Open): a scheduler of
// another tree, which Open refuses with ErrForeign, is damage naming both
// IDs and files, and is not repaired. A zero tree tells nothing. Files
// without an ID (before format version 3, which Open gives the tree's)
// are held to the tree's hosts, hostOf (what Config.HostOf is to Open), as
// Open holds them (sampleHosts): one whose records name other hosts is
// damage, not repaired; with hostOf nil they are not compared (Compared).
func CheckFor(dir string, repair bool, tree [16]byte, treeFile string, hostOf func(id uint32) (string, bool)) (*CheckReport, error) {
	p := func(name string) string { return filepath.Join(dir, name) }
	names := []string{metaName, statesName, hostsName, namesName}
	present := 0
	for _, n := range names {
		if _, err := os.Stat(p(n)); err == nil {
			present++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
	}
	if present == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoScheduler, dir)
	}
	rep := &CheckReport{Dir: dir}
	if repair {
		if _, err := os.Stat(p(metaName)); err == nil {
			lock, err := openLocked(p(metaName), os.O_RDONLY)
			if err != nil {
				return nil, err
			}
			defer lock.Close()
		}
	}
	sink := &findings{}
	newer := false
	// The ID of the first header that verifies with one (the meta
	// file's, when it does), and the files whose ID is another: no repair
	// mixes two schedulers' files.
	var id [16]byte
	idFrom := ""
	var foreignFiles []string
	v3 := false                       // a header of format version 3 verifies: a damaged one can be rebuilt
	headerFinding := map[string]int{} // damaged header's finding, by path
	header := func(path string, b []byte, magic [8]byte) bool {
		err := checkHeader(path, b, magic)
		if errors.Is(err, ErrNewerFormat) {
			newer = true
		}
		if err != nil {
			headerFinding[path] = len(sink.list)
			sink.list = append(sink.list, Finding{File: path, What: err.Error(), Damage: true})
			return false
		}
		v3 = v3 || headerVersion(b) >= 3
		switch hid := headerID(b); {
		case idFrom == "" && (magic == magicMeta || hid != [16]byte{}):
			id, idFrom = hid, path
		case id != [16]byte{} && hid != id:
			sink.list = append(sink.list, Finding{File: path, Offset: 12, What: foreign(path, hid, idFrom, id).Error(), Damage: true})
			foreignFiles = append(foreignFiles, path)
		}
		return true
	}

	var c commit
	var metaID [16]byte
	metaOK := false
	decodeCommits := func(b []byte) {
		metaID = headerID(b)
		var derr error
		c, derr = decodeMeta(p(metaName), b, sink)
		metaOK = derr == nil
	}
	meta, err := readRegular(p(metaName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sink.damage(p(metaName), 0, "missing: nothing says how much of the other files is committed")
	case err != nil:
		return nil, err
	case header(p(metaName), meta, magicMeta):
		decodeCommits(meta)
		metaStray(p(metaName), meta, sink)
	}

	magics := [3][8]byte{magicStates, magicHosts, magicNames}
	var raw, maps [3][]byte
	defer func() {
		for _, data := range raw {
			if len(data) > 0 {
				unix.Munmap(data)
			}
		}
	}()
	needs := func() [3]uint64 {
		return [3]uint64{span(c.urls, recordSize), span(c.hosts, hostRecSize), span(c.names, 1)}
	}
	for i, n := range names[1:] {
		// With sched.meta's header damaged the commit is not read yet
		// (rebuilt below, the files mapped further then if it reaches
		// past their data): mapping the whole file instead failed for a
		// sparse terabyte ("cannot allocate memory").
		data, err := mapPrivate(p(n), needs()[i])
		if errors.Is(err, fs.ErrNotExist) {
			sink.damage(p(n), 0, "missing")
			continue
		}
		if err != nil {
			return nil, err
		}
		if raw[i] = data; header(p(n), data, magics[i]) {
			maps[i] = data
		}
	}
	// A damaged header (a flipped bit, a torn sector) whose magic is
	// intact is rebuilt from the others' when one of format version 3
	// verifies: all hold that version and the same ID. Before, a single
	// flipped bit in a header lost the whole scheduler to the repair.
	rebuilt := map[string][]byte{}
	rebuild := func(path string, b []byte, magic [8]byte) bool {
		if _, bad := headerFinding[path]; !bad || !v3 || newer || len(b) < headerSize || [8]byte(b[:8]) != magic {
			return false
		}
		putHeader(b, magic, id) // the copy in memory: meta's bytes, a private mapping
		rebuilt[path] = bytes.Clone(b[:headerSize])
		return true
	}
	if meta != nil && rebuild(p(metaName), meta, magicMeta) {
		decodeCommits(meta)
		for i, n := range names[1:] {
			if raw[i] == nil || needs()[i] <= uint64(len(raw[i])) {
				continue
			}
			data, err := mapPrivate(p(n), needs()[i])
			if err != nil {
				return nil, err
			}
			if len(raw[i]) > 0 {
				unix.Munmap(raw[i])
			}
			if maps[i] != nil {
				maps[i] = data
			}
			raw[i] = data
		}
	}
	for i, n := range names[1:] {
		if maps[i] == nil && raw[i] != nil && rebuild(p(n), raw[i], magics[i]) {
			maps[i] = raw[i]
		}
	}
	rep.TreeID, rep.TreeIDFile = id, idFrom
	if tree != ([16]byte{}) && id != ([16]byte{}) && id != tree {
		sink.list = append(sink.list, Finding{File: idFrom, Offset: 12, Damage: true,
			What: fmt.Sprintf("belongs to URL tree %x, but the URL tree %s is %x: a scheduler directory of another data directory, or its URL tree was replaced (Open refuses it); put back the directories that belong together, or move %s away for a new scheduler", id, treeFile, tree, dir)})
		foreignFiles = append(foreignFiles, idFrom)
	}
	rep.Clean = c.flags&flagClean != 0
	nHosts := ^uint32(0) // host numbers are unchecked without a host table
	var hostNames []string
	if maps[1] != nil && maps[2] != nil {
		hs, err := decodeHosts(p(hostsName), p(namesName), maps[1], maps[2], c.hosts, c.names, c.flags&flagClean != 0, sink)
		if err == nil {
			nHosts = uint32(len(hs.recs))
			rep.Hosts = len(hs.recs)
			hostNames = hs.names
		}
	}
	if maps[0] != nil {
		// The private mapping takes decodeStates' in-memory fixes
		// (in-progress back to in-list) without writing to the file.
		recs := records(maps[0])
		if f, err := openRegular(p(statesName), os.O_RDONLY); err == nil {
			recs = scanRecords(recs, c.urls, func(from int64) int64 { return dataEnd(f, from, int64(len(maps[0]))) })
			f.Close()
		}
		ss, _ := decodeStates(p(statesName), headerVersion(maps[0]), recs, c.urls, nHosts, sink)
		rep.URLs, rep.InProgress, rep.Dropped = ss.count, ss.inProgress, ss.dropped
		if id == ([16]byte{}) && hostOf != nil && hostNames != nil {
			rep.Compared = true
			if err := sampleHosts(recs, ss.count, hostNames, hostOf, p(metaName), dir); err != nil {
				sink.list = append(sink.list, Finding{File: p(metaName), What: err.Error(), Damage: true})
				foreignFiles = append(foreignFiles, p(metaName))
			}
		}
		if ss.dropped > 0 {
			sink.leftover(p(statesName), headerSize+int64(c.urls)*recordSize,
				"%d records past the commit name hosts that did not survive a crash; Open drops them and the node adds those URLs again", ss.dropped)
		}
	}
	rep.Foreign, rep.Newer = foreignFiles, newer
	if !metaOK {
		sink.leftover(p(metaName), 0, "without a valid commit only the records' own checks were verified")
	}
	rep.Findings = sink.done()
	if !repair || !rep.Damaged() {
		return rep, nil
	}
	if newer {
		return rep, fmt.Errorf("%w: %s: not repaired: files of a newer format version (%d is this build's)", ErrNewerFormat, dir, FormatVersion)
	}
	if len(foreignFiles) > 0 {
		return rep, fmt.Errorf("%w: %s: not repaired: %s of another URL tree than %s", ErrForeign, dir, strings.Join(foreignFiles, ", "), idFrom)
	}
	q := filepath.Join(dir, "damaged", time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.MkdirAll(q, 0o755); err != nil {
		return rep, fmt.Errorf("scheduler: repair: %w", err)
	}
	defer func() {
		if !rep.Repaired {
			os.Remove(q) // a repair that failed before it kept anything: not an empty folder beside the kept ones
		}
	}()
	if onlyHeaders(rep.Findings, headerFinding, rebuilt) {
		for path, h := range rebuilt {
			if err := rewriteHeader(path, filepath.Join(q, filepath.Base(path)), h); err != nil {
				return rep, err
			}
		}
		rep.Repaired, rep.Quarantine, rep.HeadersRewritten = true, q, len(rebuilt)
		return rep, nil
	}
	if metaOK && maps[0] != nil && nHosts != ^uint32(0) && onlyIn(rep.Findings, p(metaName)) {
		if err := rewriteMeta(p(metaName), filepath.Join(q, metaName), c, metaID); err != nil {
			return rep, err
		}
		rep.Repaired, rep.Quarantine, rep.MetaRewritten = true, q, true
		return rep, nil
	}
	// Both commit slots lost (the meta file is 1.5 KiB: one bad sector
	// takes both), or the file itself, while the other files verify: an
	// empty commit makes Open read them as after a crash, keeping every
	// record it can vouch for. Moving the four away lost every URL's
	// state for want of three counts. Not when Open would drop records
	// (a damaged host record ends the table there): the node takes such
	// URLs for ones whose linking page was not stored, which holds after
	// a crash, not here, and they would never be fetched.
	if !metaOK && v3 && !newer && maps[0] != nil && nHosts != ^uint32(0) && rep.Dropped == 0 && onlyIn(rep.Findings, p(metaName)) {
		if err := rewriteMeta(p(metaName), filepath.Join(q, metaName), commit{seq: 1}, id); err != nil {
			return rep, err
		}
		rep.Repaired, rep.Quarantine, rep.CommitLost = true, q, true
		return rep, nil
	}
	if metaOK && maps[0] != nil && nHosts != ^uint32(0) && onlyIn(rep.Findings, p(statesName)) {
		n, err := salvageStates(p(statesName), filepath.Join(q, statesName), headerVersion(maps[0]), c.urls, nHosts)
		if err != nil {
			return rep, err
		}
		if h := rebuilt[p(statesName)]; h != nil {
			if err := rewriteHeader(p(statesName), "", h); err != nil {
				return rep, err
			}
			rep.HeadersRewritten = 1
		}
		rep.Repaired, rep.Quarantine, rep.Salvaged = true, q, n
		return rep, nil
	}
	// The meta file goes last: until it moves, Open refuses the
	// directory rather than creating a scheduler beside stray files.
	for _, n := range []string{statesName, hostsName, namesName, metaName} {
		if err := os.Rename(p(n), filepath.Join(q, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("scheduler: repair: %w (files left in %s and %s)", err, dir, q)
		}
	}
	if err := syncDir(q); err != nil {
		return rep, err
	}
	if err := syncDir(dir); err != nil {
		return rep, err
	}
	rep.Repaired, rep.Quarantine = true, q
	return rep, nil
}

// metaStray records as damage what a meta file holds outside its header
// and commit slots: kspider writes zeros there (writeMeta), and the file
// is metaFileSize bytes long. Nothing reads those bytes, so Open takes the
// file, but a sector of it was written by something else (a misdirected
// write, another file's data), and check said ok of it. A repair writes
// the file anew from its valid commit (rewriteMeta).
func metaStray(path string, b []byte, sink *findings) {
	switch {
	case len(b) > metaFileSize:
		sink.damage(path, metaFileSize, "the file is longer than a meta file's %d bytes", metaFileSize)
	case len(b) < metaFileSize && int64(len(b)) >= metaSlotOffsets[1]+metaSlotSize:
		// (Cut shorter, decodeMeta reports the slot cut off.)
		sink.damage(path, int64(len(b)), "the file ends at %d bytes, a meta file has %d: cut short", len(b), metaFileSize)
	}
	from := int64(headerSize)
	for _, to := range []int64{metaSlotOffsets[0], metaSlotOffsets[1], metaFileSize} {
		for off := from; off < min(to, int64(len(b))); off++ {
			if b[off] != 0 {
				sink.damage(path, off, "byte %#02x between offsets %d and %d, outside the header and the commit slots, which kspider leaves zero", b[off], from, to)
				break
			}
		}
		from = to + metaSlotSize
	}
}

// mapPrivate maps the file at path copy-on-write from a read-only
// descriptor: the decoders may change the mapping, the file never changes.
// It maps as far as the file's data or need (the committed part's end)
// reaches, not the whole file: a private writable mapping of a file
// extended with zeros (a sparse terabyte, which Open maps shared without
// trouble) was refused by the kernel ("cannot allocate memory"), so Check
// and its repair failed; past the data are only holes, which the decoders
// do not read.
func mapPrivate(path string, need uint64) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if fi.Size() == 0 {
		return []byte{}, nil
	}
	if fi.Size() != int64(int(fi.Size())) {
		return nil, fmt.Errorf("scheduler: %s: file of %d bytes is too large to map", path, fi.Size())
	}
	size := dataEnd(f, 0, fi.Size())
	if need < uint64(fi.Size()) {
		size = max(size, int64(need))
	} else {
		size = fi.Size()
	}
	if size = min(fi.Size(), (size+4095)&^4095); size == 0 {
		return []byte{}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("scheduler: mmap %s: %w", path, err)
	}
	return data, nil
}

// readRegular reads the small file at path (the meta file), which must be
// a regular file (openRegular).
func readRegular(path string) ([]byte, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, metaFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	return b, nil
}

// span is the end of count records of size bytes after a header, or the
// largest uint64 when that would overflow (a commit's counts are not
// bounded).
func span(count, size uint64) uint64 {
	if count > (1<<63)/size {
		return 1<<64 - 1
	}
	return headerSize + count*size
}
