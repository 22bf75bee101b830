package urltree

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
)

// Every file starts with a 64-byte header:
//
//	offset size
//	0      8    magic, one per file kind ("KSUTMETA", "KSUTNODE", ...)
//	8      4    format version (little endian), FormatVersion when written
//	12     16   the tree's ID (since version 3; zero in versions 1 and 2)
//	28     32   zero
//	60     4    CRC-32C of bytes 0..59 (since version 2; zero in version 1)
//
// The checksum is checked before the version is believed, so a damaged
// version field reads as a corrupt header, not as a newer format. A file
// of a newer version is refused with ErrNewerFormat, one of version 1
// (no checksums) with ErrOldFormat, both naming the version found and the
// one this build reads.
const headerSize = 64

// FormatVersion is the on-disk format this package writes. Version 2
// added the checksums: the header's, the arena's block trailers, and the
// commit's tail and node-file checksums. Version 3 added the tree's ID to
// every header; version 2 files are read, and a writer's Open gives them
// an ID (the array files first, the meta file last).
const FormatVersion = 3

// ID identifies a tree: 16 random bytes drawn when it is created and
// recorded in the header of each of its four files, so that a file of
// another tree (copied or swapped in from another data directory) is
// refused rather than read as this one's. The zero ID is a tree of format
// version 2, which has none.
type ID [16]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero ID (no identity recorded).
func (id ID) IsZero() bool { return id == ID{} }

func newID() ID {
	var id ID
	rand.Read(id[:]) // never fails (crypto/rand panics rather)
	return id
}

var (
	magicMeta  = [8]byte{'K', 'S', 'U', 'T', 'M', 'E', 'T', 'A'}
	magicNodes = [8]byte{'K', 'S', 'U', 'T', 'N', 'O', 'D', 'E'}
	magicPtrs  = [8]byte{'K', 'S', 'U', 'T', 'P', 'T', 'R', 'S'}
	magicArena = [8]byte{'K', 'S', 'U', 'T', 'A', 'R', 'N', 'A'}
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func putHeader(b []byte, magic [8]byte, id ID) {
	clear(b[:headerSize])
	copy(b, magic[:])
	binary.LittleEndian.PutUint32(b[8:], FormatVersion)
	copy(b[12:], id[:])
	binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
}

// headerID returns the ID in a header checkHeader took (zero before
// version 3).
func headerID(b []byte) ID {
	if binary.LittleEndian.Uint32(b[8:]) < 3 {
		return ID{}
	}
	return ID(b[12:28])
}

// foreign is the error for a file whose header names another tree than
// the meta file's.
func foreign(path string, id ID, metaPath string, metaID ID) error {
	what := "tree " + id.String()
	if id.IsZero() {
		what = "no tree (format version 2, no ID)"
	}
	return fmt.Errorf("%w: %s belongs to %s, but %s to tree %s: a file copied or swapped in from another tree (another data directory?); put back this tree's own file, or move the directory away for a new tree", ErrForeign, path, what, metaPath, metaID)
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
		return fmt.Errorf("%w: %s has format version 1 (no checksums); this build reads versions 2 and %d (Check with repair, kspider check --repair, converts it)", ErrOldFormat, path, FormatVersion)
	}
	if sum != crc32.Checksum(b[:60], castagnoli) {
		return corrupt(path, 0, "corrupt header (checksum mismatch; version field reads %d)", v)
	}
	if v > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d; this build reads version %d", ErrNewerFormat, path, v, FormatVersion)
	}
	if v < 2 {
		return fmt.Errorf("%w: %s has format version %d; this build reads versions 2 and %d", ErrOldFormat, path, v, FormatVersion)
	}
	if v == 2 && !allZero(b[12:60]) {
		return corrupt(path, 12, "format version 2 header with nonzero reserved bytes")
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
