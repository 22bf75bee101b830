package scheduler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	"golang.org/x/sys/unix"
)

// File names inside a scheduler's directory.
const (
	metaName   = "sched.meta"
	statesName = "sched.states"
	hostsName  = "sched.hosts"
	namesName  = "sched.names"
)

// Every file starts with a 64-byte header:
//
//	offset size
//	0      8    magic, one per file kind ("KSSCMETA", "KSSCSTAT", ...)
//	8      4    format version (little endian), FormatVersion when written
//	12     16   the URL tree's ID (Config.TreeID; since version 3)
//	28     32   zero
//	60     4    CRC-32C of bytes 0..59 (since version 3)
//
// Before version 3 bytes 12..63 were zero; such a header is read as it
// was (its version field is told from damage by the zeros, and a version
// 3 header's by its checksum). A file whose version is newer than this
// build reads is refused with ErrNewerFormat naming the version found and
// the one supported, rather than misread.
const headerSize = 64

// FormatVersion is the on-disk format this package writes, for all four
// files: version 4 took bits 44..47 of a URL's state record from the host
// number for the redirects in a row that led to the URL (state.go; the
// other files are as in version 3, host numbers now below 2^28), version 3
// added the URL tree's ID and the header checksum. Before it, sched.states
// was at version 2 (no all-zero record below the highest id; state.go) and
// the other files at version 1. Open reads all those, converts a version 1
// states file to version 2, gives a states file of before version 4 the
// version 4 header (so a build of before refuses it as newer rather than
// read hops as host bits; the other files keep theirs) and then gives the
// files the ID (headers of the array files first, the meta file's last).
const FormatVersion = 4

// oldVersion is the newest format version without the ID of the file of
// the given magic.
func oldVersion(magic [8]byte) uint32 {
	if magic == magicStates {
		return 2
	}
	return 1
}

var (
	magicMeta   = [8]byte{'K', 'S', 'S', 'C', 'M', 'E', 'T', 'A'}
	magicStates = [8]byte{'K', 'S', 'S', 'C', 'S', 'T', 'A', 'T'}
	magicHosts  = [8]byte{'K', 'S', 'S', 'C', 'H', 'O', 'S', 'T'}
	magicNames  = [8]byte{'K', 'S', 'S', 'C', 'N', 'A', 'M', 'E'}
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func putHeader(b []byte, magic [8]byte, id [16]byte) {
	clear(b[:headerSize])
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	copy(b[12:], id[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
}

// headerVersion returns the format version of a header checkHeader took.
func headerVersion(b []byte) uint32 { return binary.LittleEndian.Uint32(b[8:]) }

// headerID returns the tree ID in a header checkHeader took (zero before
// version 3).
func headerID(b []byte) [16]byte {
	if headerVersion(b) < 3 {
		return [16]byte{}
	}
	return [16]byte(b[12:28])
}

func checkHeader(path string, b []byte, magic [8]byte) error {
	if len(b) < headerSize {
		return fmt.Errorf("%w: %s: %d bytes, shorter than its %d-byte header", ErrCorrupt, path, len(b), headerSize)
	}
	if [8]byte(b[:8]) != magic {
		return fmt.Errorf("%w: %s: bad magic %q, want %q", ErrCorrupt, path, b[:8], magic[:])
	}
	v := headerVersion(b)
	if isZero(b[12:headerSize]) {
		// A header of before version 3: the zeros tell a damaged
		// version field from a newer format.
		if v == 0 || v > oldVersion(magic) {
			return fmt.Errorf("%w: %s: format version %d with no header checksum", ErrCorrupt, path, v)
		}
		return nil
	}
	if binary.LittleEndian.Uint32(b[60:]) != crc32.Checksum(b[:60], castagnoli) {
		return fmt.Errorf("%w: %s: corrupt header (checksum mismatch; version field reads %d)", ErrCorrupt, path, v)
	}
	if v > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this build reads versions 1 to %d", ErrNewerFormat, path, v, FormatVersion)
	}
	if v < 3 {
		return fmt.Errorf("%w: %s: format version %d with a header checksum (since version 3)", ErrCorrupt, path, v)
	}
	return nil
}

// foreign is the error for a file whose header names another URL tree
// than the meta file's.
func foreign(path string, id [16]byte, metaPath string, metaID [16]byte) error {
	what := fmt.Sprintf("URL tree %x", id)
	if id == ([16]byte{}) {
		what = "no URL tree (a format version before 3, no ID)"
	}
	return fmt.Errorf("%w: %s belongs to %s, but %s to URL tree %x: a file copied or swapped in from another scheduler (another data directory?); put back this scheduler's own file", ErrForeign, path, what, metaPath, metaID)
}

// The meta file holds the commit record: how much of the other files is
// durable. It is a 64-byte header followed by two slots, at offsets 512
// and 1024 so that each lies in its own disk sector. Sync writes the slot
// the previous commit did not use, so a torn write can only damage the
// newer slot and Open falls back to the older one. The bytes between the
// header and the slots, and after the second slot, are zero (Check
// reports any other, and a file of another length, as damage). Slot layout (little
// endian):
//
//	offset size
//	0      8    seq: commit number, the valid slot with the higher one wins
//	8      8    urls: state records durable (highest added id + 1)
//	16     8    hosts: host records durable
//	24     8    names: bytes of host names durable after the names header
//	32     4    flags: 1 = clean close (taken off again when Open finds it)
//	36     24   zero
//	60     4    CRC-32C of bytes 0..59
const (
	metaSlotSize = 64
	metaFileSize = 1536
	flagClean    = 1
)

var metaSlotOffsets = [2]int64{512, 1024}

type commit struct {
	seq   uint64
	urls  uint64
	hosts uint64
	names uint64
	flags uint32
}

func (c commit) encode() []byte {
	b := make([]byte, metaSlotSize)
	binary.LittleEndian.PutUint64(b[0:], c.seq)
	binary.LittleEndian.PutUint64(b[8:], c.urls)
	binary.LittleEndian.PutUint64(b[16:], c.hosts)
	binary.LittleEndian.PutUint64(b[24:], c.names)
	binary.LittleEndian.PutUint32(b[32:], c.flags)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

func decodeCommit(b []byte) (commit, bool) {
	if len(b) < metaSlotSize || binary.LittleEndian.Uint32(b[60:]) != crc32.Checksum(b[:60], castagnoli) {
		return commit{}, false
	}
	c := commit{
		seq:   binary.LittleEndian.Uint64(b[0:]),
		urls:  binary.LittleEndian.Uint64(b[8:]),
		hosts: binary.LittleEndian.Uint64(b[16:]),
		names: binary.LittleEndian.Uint64(b[24:]),
		flags: binary.LittleEndian.Uint32(b[32:]),
	}
	return c, c.seq != 0
}

// decodeMeta returns the newest valid commit of a meta file's contents.
// With a sink (Check) a slot that holds something but fails its checksum
// is recorded as damage even when the other slot is valid: it is either a
// damaged sector or a commit cut short, and the two look the same.
func decodeMeta(path string, b []byte, sink *findings) (commit, error) {
	if err := checkHeader(path, b, magicMeta); err != nil {
		return commit{}, err
	}
	var last commit
	found := false
	for i, off := range metaSlotOffsets {
		if off+metaSlotSize > int64(len(b)) {
			sink.damage(path, off, "commit slot cut off: the file has %d bytes", len(b))
			continue
		}
		slot := b[off : off+metaSlotSize]
		c, ok := decodeCommit(slot)
		if ok && c.seq%2 != uint64(i) {
			// Commit n is written to slot n mod 2: this one was moved
			// (a misdirected write). Its contents verify, so Open still
			// trusts them; Check reports it.
			sink.damage(path, off, "commit %d in the slot of commits %s numbered", c.seq, [2]string{"even", "odd"}[i])
		}
		if ok && (!found || c.seq > last.seq) {
			last, found = c, true
		}
		if binary.LittleEndian.Uint32(slot[60:]) != crc32.Checksum(slot[:60], castagnoli) && !isZero(slot) {
			sink.damage(path, off, "commit slot fails its checksum")
		}
	}
	if !found {
		return commit{}, sink.fatal(path, metaSlotOffsets[0], "neither commit slot is valid")
	}
	// Commits alternate between the slots and a slot is never cleared, so
	// past the second commit both hold one: a zeroed slot is damage too.
	if other := metaSlotOffsets[(last.seq+1)%2]; last.seq >= 2 && other+metaSlotSize <= int64(len(b)) && isZero(b[other:other+metaSlotSize]) {
		sink.damage(path, other, "commit slot is all zero, but commit %d was written there", last.seq-1)
	}
	return last, nil
}

type metaFile struct {
	path string
	f    *os.File
	id   [16]byte // the URL tree's, from the header (zero before version 3)
	last commit
}

// newSuffix names the meta file while createMeta writes it.
const newSuffix = ".new"

// createMeta makes the meta file under a temporary name and links it into
// place once complete: a crash never leaves a meta file without its
// commits (Open would refuse it), only files clearCreate removes.
func createMeta(path string, id [16]byte) (*metaFile, error) {
	tmp := path + newSuffix
	f, err := openLocked(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, err
	}
	b := make([]byte, metaFileSize)
	putHeader(b, magicMeta, id)
	m := &metaFile{path: tmp, f: f, id: id}
	fail := func(err error) (*metaFile, error) {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fail(fmt.Errorf("scheduler: write %s: %w", tmp, err))
	}
	// Both slots get an (empty) commit, so that from the start a zeroed
	// slot is damage decodeMeta sees.
	for range 2 {
		if err := m.write(commit{}); err != nil {
			return fail(err)
		}
	}
	// Link, not rename: a meta file made meanwhile is never replaced.
	if err := os.Link(tmp, path); err != nil {
		return fail(fmt.Errorf("scheduler: %w", err))
	}
	os.Remove(tmp)
	m.path = path
	return m, nil
}

func openMeta(path string) (*metaFile, error) {
	f, err := openLocked(path, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	b := make([]byte, metaFileSize)
	n, _ := f.ReadAt(b, 0)
	c, err := decodeMeta(path, b[:n], nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &metaFile{path: path, f: f, id: headerID(b), last: c}, nil
}

// write makes c the durable commit: c.seq is set to one past the last.
func (m *metaFile) write(c commit) error {
	c.seq = m.last.seq + 1
	off := metaSlotOffsets[c.seq%2]
	if _, err := m.f.WriteAt(c.encode(), off); err != nil {
		return fmt.Errorf("scheduler: write %s: %w", m.path, err)
	}
	if err := unix.Fdatasync(int(m.f.Fd())); err != nil {
		return fmt.Errorf("scheduler: sync %s: %w", m.path, err)
	}
	m.last = c
	return nil
}

// setID writes the header anew with id (an older scheduler's upgrade).
func (m *metaFile) setID(id [16]byte) error {
	b := make([]byte, headerSize)
	putHeader(b, magicMeta, id)
	if _, err := m.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("scheduler: write %s: %w", m.path, err)
	}
	if err := unix.Fdatasync(int(m.f.Fd())); err != nil {
		return fmt.Errorf("scheduler: sync %s: %w", m.path, err)
	}
	m.id = id
	return nil
}

func (m *metaFile) close() error { return m.f.Close() }

// openLocked opens the meta file and takes an exclusive lock on it for as
// long as it is open (a killed process loses it), so that two processes
// never share one scheduler's files.
func openLocked(path string, flag int) (*os.File, error) {
	f, err := openRegular(path, flag)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("scheduler: lock %s: %w", path, err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("scheduler: sync %s: %w", dir, err)
	}
	return nil
}
