package urltree

import (
	"encoding/binary"
	"fmt"
)

// Every file starts with a 64-byte header:
//
//	offset size
//	0      8    magic, one per file kind ("KSUTMETA", "KSUTNODE", ...)
//	8      4    format version (little endian), FormatVersion when written
//	12     52   zero
//
// A file whose version is newer than FormatVersion is refused with
// ErrNewerFormat rather than misread.
const headerSize = 64

// FormatVersion is the on-disk format this package writes and reads.
const FormatVersion = 1

var (
	magicMeta  = [8]byte{'K', 'S', 'U', 'T', 'M', 'E', 'T', 'A'}
	magicNodes = [8]byte{'K', 'S', 'U', 'T', 'N', 'O', 'D', 'E'}
	magicPtrs  = [8]byte{'K', 'S', 'U', 'T', 'P', 'T', 'R', 'S'}
	magicArena = [8]byte{'K', 'S', 'U', 'T', 'A', 'R', 'N', 'A'}
)

func putHeader(b []byte, magic [8]byte) {
	clear(b[:headerSize])
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
}

func checkHeader(path string, b []byte, magic [8]byte) error {
	if len(b) < headerSize {
		return fmt.Errorf("%w: %s: %d bytes, shorter than its %d-byte header", ErrCorrupt, path, len(b), headerSize)
	}
	if [8]byte(b[:8]) != magic {
		return fmt.Errorf("%w: %s: bad magic %q, want %q", ErrCorrupt, path, b[:8], magic[:])
	}
	v := binary.LittleEndian.Uint32(b[8:])
	if v > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this build reads up to %d", ErrNewerFormat, path, v, FormatVersion)
	}
	if v == 0 {
		return fmt.Errorf("%w: %s: format version 0", ErrCorrupt, path)
	}
	return nil
}
