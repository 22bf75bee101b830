package urltree

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Every file starts with a 64-byte header:
//
//	offset size
//	0      8    magic, one per file kind ("KSUTMETA", "KSUTNODE", ...)
//	8      4    format version (little endian), FormatVersion when written
//	12     48   zero
//	60     4    CRC-32C of bytes 0..59 (since version 2; zero in version 1)
//
// The checksum is checked before the version is believed, so a damaged
// version field reads as a corrupt header, not as a newer format. A file
// of a newer version is refused with ErrNewerFormat, one of version 1
// (no checksums) with ErrOldFormat, both naming the version found and the
// one this build reads.
const headerSize = 64

// FormatVersion is the on-disk format this package writes and reads.
// Version 2 added the checksums: the header's, the arena's block
// trailers, and the commit's tail and node-file checksums.
const FormatVersion = 2

var (
	magicMeta  = [8]byte{'K', 'S', 'U', 'T', 'M', 'E', 'T', 'A'}
	magicNodes = [8]byte{'K', 'S', 'U', 'T', 'N', 'O', 'D', 'E'}
	magicPtrs  = [8]byte{'K', 'S', 'U', 'T', 'P', 'T', 'R', 'S'}
	magicArena = [8]byte{'K', 'S', 'U', 'T', 'A', 'R', 'N', 'A'}
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func putHeader(b []byte, magic [8]byte) {
	clear(b[:headerSize])
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
}

func checkHeader(path string, b []byte, magic [8]byte) error {
	if len(b) < headerSize {
		return corrupt(path, uint64(len(b)), "the file ends here, inside its %d-byte header", headerSize)
	}
	if [8]byte(b[:8]) != magic {
		return corrupt(path, 0, "bad magic %q, want %q", b[:8], magic[:])
	}
	v := binary.LittleEndian.Uint32(b[8:])
	sum := binary.LittleEndian.Uint32(b[60:])
	if sum == 0 && v == 1 && allZero(b[12:60]) {
		return fmt.Errorf("%w: %s has format version 1 (no checksums); this build reads version %d only (Check with repair, kspider check --repair, converts it)", ErrOldFormat, path, FormatVersion)
	}
	if sum != crc32.Checksum(b[:60], castagnoli) {
		return corrupt(path, 0, "corrupt header (checksum mismatch; version field reads %d)", v)
	}
	if v > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this build reads version %d", ErrNewerFormat, path, v, FormatVersion)
	}
	if v < FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this build reads version %d", ErrOldFormat, path, v, FormatVersion)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
