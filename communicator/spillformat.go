package communicator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// The spill file's format (documented in spill.go) in bytes: its header,
// a record's checksum, an item record's payload.

// spillHeaderBytes is the header of a new spill file.
func spillHeaderBytes(self, peer NodeID) []byte {
	return spillHeaderOf(spillVersion, self, peer)
}

func spillHeaderOf(version uint16, self, peer NodeID) []byte {
	b := make([]byte, 0, spillHeader)
	b = append(b, spillMagic...)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.BigEndian.AppendUint16(b, uint16(self))
	b = binary.BigEndian.AppendUint16(b, uint16(peer))
	b = binary.BigEndian.AppendUint16(b, 0)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// recSum is the checksum of the record at off with payload p in a file of
// the given version.
func recSum(version uint16, off int64, p []byte) uint32 {
	if version == 1 {
		return crc32.Checksum(p, castagnoli)
	}
	// The CRC of the offset's 8 big-endian bytes, a byte at a time as
	// crc32 does without hardware: a slice of them handed to crc32
	// escaped, an allocation per record (3 MB to scan 200,000).
	crc := ^uint32(0)
	for i := 56; i >= 0; i -= 8 {
		crc = castagnoli[byte(crc)^byte(off>>i)] ^ crc>>8
	}
	return crc32.Update(^crc, castagnoli, p)
}

// parseItemRecord reads an item record's payload. An item longer than
// maxURL (written by a run with a larger Payload) is refused here: sent,
// the peer would drop its datagram as malformed at every retransmission,
// and the batch, with the items beside it, would never be acknowledged.
func parseItemRecord(p []byte, maxURL int) (uint64, []byte, error) {
	tag, k := binary.Uvarint(p[1:])
	if k <= 0 || len(p) == 1+k {
		return 0, nil, errors.New("bad item record")
	}
	if n := len(p) - 1 - k; n > maxURL {
		return 0, nil, fmt.Errorf("item of %d bytes, longer than the longest this endpoint sends (%d)", n, maxURL)
	}
	return tag, p[1+k:], nil
}

// upgrade writes the current version's header over an older one, in a
// file holding no record: what follows is appended in the current format.
// Without it, a file of version 1 would never lose version 1's weakness
// (recSum), as spill files are emptied, not removed. Failing, the file
// keeps its header and its version.
func (s *spill) upgrade() error {
	f, err := openNoLink(s.path, os.O_WRONLY)
	if err == nil {
		_, err = f.WriteAt(spillHeaderBytes(s.self, s.peer), 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("spill file %s: writing a version %d header over version %d: %w", s.path, spillVersion, s.version, err)
	}
	s.version = spillVersion
	return nil
}
