package urltree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The meta file holds the commit record: which prefix of the arrays is
// durable. It is a 64-byte header followed by two slots, at offsets 512 and
// 1024 so that each lies in its own disk sector. A commit is written to
// both: first to the slot of its parity, synced, then to the other,
// synced. A torn write can damage only the slot being written, while the
// other holds the previous commit or this one, and damage to either slot
// alone loses nothing: Open takes the valid slot with the higher number.
// Slot layout (little endian):
//
//	offset size
//	0      8    seq: commit number, the valid slot with the higher one wins
//	8      8    count: URLs durable in the arena and pointer arrays
//	16     8    arena length: entry bytes after the arena's header
//	24     4    root node id (meaningful only when clean)
//	28     4    flags: 1 = clean, the node array matches count and root
//	32     4    tail checksum: CRC-32C of the last block's committed
//	            entries when it is not full (entry.go), else 0
//	36     4    node checksum (when clean): CRC-32C of the count nodes
//	40     20   zero
//	60     4    CRC-32C of bytes 0..59
//
// The slots differ only after a crash between their two writes.
const (
	metaSlotSize = 64
	metaFileSize = 1536
	flagClean    = 1
)

var metaSlotOffsets = [2]int64{512, 1024}

type commit struct {
	seq      uint64
	count    uint64
	arenaLen uint64
	root     uint32
	flags    uint32
	tailCRC  uint32
	nodesCRC uint32
}

func (c commit) encode() []byte {
	b := make([]byte, metaSlotSize)
	binary.LittleEndian.PutUint64(b[0:], c.seq)
	binary.LittleEndian.PutUint64(b[8:], c.count)
	binary.LittleEndian.PutUint64(b[16:], c.arenaLen)
	binary.LittleEndian.PutUint32(b[24:], c.root)
	binary.LittleEndian.PutUint32(b[28:], c.flags)
	binary.LittleEndian.PutUint32(b[32:], c.tailCRC)
	binary.LittleEndian.PutUint32(b[36:], c.nodesCRC)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
	return b
}

func decodeCommit(b []byte) (commit, bool) {
	if len(b) < metaSlotSize || binary.LittleEndian.Uint32(b[60:]) != crc32.Checksum(b[:60], castagnoli) {
		return commit{}, false
	}
	c := commit{
		seq:      binary.LittleEndian.Uint64(b[0:]),
		count:    binary.LittleEndian.Uint64(b[8:]),
		arenaLen: binary.LittleEndian.Uint64(b[16:]),
		root:     binary.LittleEndian.Uint32(b[24:]),
		flags:    binary.LittleEndian.Uint32(b[28:]),
		tailCRC:  binary.LittleEndian.Uint32(b[32:]),
		nodesCRC: binary.LittleEndian.Uint32(b[36:]),
	}
	return c, c.seq != 0
}

type metaFile struct {
	path    string
	f       *os.File
	id      ID // the tree's, from the header (zero in format version 2)
	last    commit
	lastOff int64 // offset of the slot last holds
}

// newSuffix names the meta file while createMeta writes it.
const newSuffix = ".new"

// createMeta makes the meta file with its first commit c under a
// temporary name and links it into place once complete: a kill -9
// between the file's creation and its first commit left a meta file that
// Open refused for good; now a crash leaves only files create clears.
func createMeta(path string, c commit, id ID) (*metaFile, error) {
	tmp := path + newSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("urltree: %w", err)
	}
	f, err := openLocked(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return nil, err
	}
	m := &metaFile{path: tmp, f: f, id: id}
	fail := func(err error) (*metaFile, error) {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	b := make([]byte, metaFileSize)
	putHeader(b, magicMeta, id)
	if _, err := f.WriteAt(b, 0); err != nil {
		return fail(fmt.Errorf("urltree: write %s: %w", tmp, err))
	}
	if err := m.write(c); err != nil {
		return fail(err)
	}
	// Link, not rename: a meta file made meanwhile is never replaced.
	if err := os.Link(tmp, path); err != nil {
		return fail(fmt.Errorf("urltree: %w", err))
	}
	os.Remove(tmp)
	m.path = path
	return m, nil
}

func openMeta(path string, readOnly bool) (*metaFile, error) {
	var f *os.File
	var err error
	if readOnly {
		// A reader takes no lock: tools and tests read the tree a
		// node left, and a reader writes nothing.
		if f, err = openRegular(path, os.O_RDONLY); err != nil {
			return nil, err
		}
	} else if f, err = openLocked(path, os.O_RDWR); err != nil {
		return nil, err
	}
	b := make([]byte, metaFileSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && n < headerSize {
		f.Close()
		return nil, corrupt(path, uint64(n), "the file ends here, inside its %d-byte header", headerSize)
	}
	b = b[:n]
	if err := checkHeader(path, b, magicMeta); err != nil {
		f.Close()
		return nil, err
	}
	m := &metaFile{path: path, f: f, id: headerID(b)}
	found := false
	for _, off := range metaSlotOffsets {
		if off+metaSlotSize > int64(len(b)) {
			continue
		}
		if c, ok := decodeCommit(b[off : off+metaSlotSize]); ok && (!found || c.seq > m.last.seq) {
			m.last, m.lastOff, found = c, off, true
		}
	}
	if !found {
		f.Close()
		return nil, corrupt(path, uint64(metaSlotOffsets[0]), "neither commit slot (at %d and %d) is valid", metaSlotOffsets[0], metaSlotOffsets[1])
	}
	return m, nil
}

// write makes c the durable commit: c.seq is set to one past the last.
func (m *metaFile) write(c commit) error {
	c.seq = m.last.seq + 1
	b := c.encode()
	for i := range metaSlotOffsets {
		off := metaSlotOffsets[(c.seq+uint64(i))%2]
		if _, err := m.f.WriteAt(b, off); err != nil {
			return fmt.Errorf("urltree: write %s: %w", m.path, err)
		}
		if err := unix.Fdatasync(int(m.f.Fd())); err != nil {
			return fmt.Errorf("urltree: sync %s: %w", m.path, err)
		}
		if i == 0 {
			m.last, m.lastOff = c, off
		}
	}
	return nil
}

// setID writes the header anew with id (a version 2 tree's upgrade).
func (m *metaFile) setID(id ID) error {
	b := make([]byte, headerSize)
	putHeader(b, magicMeta, id)
	if _, err := m.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("urltree: write %s: %w", m.path, err)
	}
	if err := unix.Fdatasync(int(m.f.Fd())); err != nil {
		return fmt.Errorf("urltree: sync %s: %w", m.path, err)
	}
	m.id = id
	return nil
}

func (m *metaFile) close() error { return m.f.Close() }

// openLocked opens the meta file and takes an exclusive lock on it for as
// long as it is open (a killed process loses it): a second writer rebuilt
// the node file under the first, whose Find then missed URLs it had
// added, gave them new ids, and left a tree no Open would take ("URL 200
// repeats URL 100").
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
		return nil, fmt.Errorf("urltree: lock %s: %w", path, err)
	}
	return f, nil
}
