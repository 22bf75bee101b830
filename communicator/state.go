package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// State file (SpillDir/state), replaced whole by write-to-temp, fsync,
// rename:
//
//	magic "kspstate" | version u32 = 1 | epoch u64 | count u32 |
//	count × (node id u16 | sender epoch u64 | cum u32) | CRC-32C u32
//
// all big-endian; the CRC covers every byte before it. epoch is this
// endpoint's last epoch (the next start takes a larger one even if the
// wall clock stepped back); each entry is how far a sender's batches are
// acknowledged, so a restarted receiver still drops what it acknowledged.
const (
	stateMagic     = "kspstate"
	stateVersion   = 1
	stateEntrySize = 14
)

type stateEntry struct {
	id    NodeID
	epoch uint64
	cum   uint32
}

type stateFile struct {
	path    string // "" when there is no SpillDir
	last    uint64
	entries map[NodeID]stateEntry
}

func openState(dir string) (*stateFile, error) {
	s := &stateFile{entries: make(map[NodeID]stateEntry)}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	s.path = filepath.Join(dir, "state")
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("communicator: %w", err)
	}
	if _, err := s.parse(b); err != nil {
		return nil, fmt.Errorf("communicator: state file %s: %w (remove it to start afresh; peers may then deliver acknowledged batches again)", s.path, err)
	}
	return s, nil
}

// parse reads a state file's contents; a problem comes with the offset it
// was found at.
func (s *stateFile) parse(b []byte) (int64, error) {
	const fixed = 8 + 4 + 8 + 4
	if len(b) < fixed+4 {
		return int64(len(b)), fmt.Errorf("%d bytes, shorter than a header", len(b))
	}
	if string(b[:8]) != stateMagic {
		return 0, errors.New("bad magic at offset 0")
	}
	if v := binary.BigEndian.Uint32(b[8:]); v != stateVersion {
		return 8, fmt.Errorf("format version %d at offset 8; this build reads version %d", v, stateVersion)
	}
	n := int(binary.BigEndian.Uint32(b[20:]))
	if n > 1<<16 || len(b) != fixed+n*stateEntrySize+4 {
		return 20, fmt.Errorf("%d entries do not match the file size %d", n, len(b))
	}
	end := len(b) - 4
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return int64(end), fmt.Errorf("checksum mismatch at offset %d", end)
	}
	s.last = binary.BigEndian.Uint64(b[12:])
	for i := range n {
		r := b[fixed+i*stateEntrySize:]
		e := stateEntry{NodeID(binary.BigEndian.Uint16(r)), binary.BigEndian.Uint64(r[2:]), binary.BigEndian.Uint32(r[10:])}
		s.entries[e.id] = e
	}
	return 0, nil
}

func (s *stateFile) enabled() bool { return s.path != "" }

func (s *stateFile) entry(id NodeID) (stateEntry, bool) {
	e, ok := s.entries[id]
	return e, ok
}

// nextEpoch returns the epoch of this start: larger than the last one.
func (s *stateFile) nextEpoch(now time.Time) uint64 {
	e := newEpoch(now)
	if e <= s.last {
		e = s.last + 1
	}
	return e
}

// save replaces the file with epoch and ents.
func (s *stateFile) save(epoch uint64, ents []stateEntry) error {
	if s.path == "" {
		return nil
	}
	b := make([]byte, 0, 28+len(ents)*stateEntrySize)
	b = append(b, stateMagic...)
	b = binary.BigEndian.AppendUint32(b, stateVersion)
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ents)))
	for _, e := range ents {
		b = binary.BigEndian.AppendUint16(b, uint16(e.id))
		b = binary.BigEndian.AppendUint64(b, e.epoch)
		b = binary.BigEndian.AppendUint32(b, e.cum)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("communicator: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(s.path))
	}
	if err != nil {
		return fmt.Errorf("communicator: saving %s: %w", s.path, err)
	}
	s.last = epoch
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
