package urltree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ReadID returns the ID of the tree in dir from its meta file's header
// alone, for a caller that needs the tree's identity only (to hold data
// kept by its ids to it): Open verifies every entry and, for a tree not
// closed cleanly (a node running, or crashed), rebuilds the node array in
// memory, minutes and gigabytes for a large tree. The zero ID is a tree of
// format version 2. No meta file is ErrNoTree; a damaged header, or one
// of another format version, the error Open gives. Nothing else of the
// tree is read, so nothing else is vouched for: Check does that.
func ReadID(dir string) (ID, error) {
	path := filepath.Join(dir, metaName)
	f, err := openRegular(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return ID{}, fmt.Errorf("%w: %s", ErrNoTree, dir)
	}
	if err != nil {
		return ID{}, err
	}
	defer f.Close()
	b := make([]byte, headerSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return ID{}, fmt.Errorf("urltree: read %s: %w", path, err)
	}
	if err := checkHeader(path, b[:n], magicMeta); err != nil {
		return ID{}, err
	}
	return headerID(b), nil
}
