package communicator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

var errNotRegular = errors.New("not a regular file")

// errStateSize marks a state file larger than any state file.
var errStateSize = errors.New("more than a state file has")

// openNoLink opens a state or spill file, refusing a symbolic link:
// followed, saves and appends went to its target, which another node or
// another data directory may use too (two writers of one file), or which
// is no file of the communicator's at all.
func openNoLink(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, 0)
	if err != nil && errors.Is(err, syscall.ELOOP) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			to, _ := os.Readlink(path)
			return nil, fmt.Errorf("%s is a symbolic link (to %s): the communicator's files are files of their own in its directory, not shared through links; replace the link with the file itself", path, to)
		}
	}
	return f, err
}

// openRegular opens a state or spill file for reading, or says it is not
// a regular file: a FIFO put there would block the open, and the start
// or kspider check, for good (a device would be read as the file).
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := openNoLink(path, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is %w (a %v): delete it", path, errNotRegular, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// maxStateSize bounds a state file: two slots of the most entries there
// can be (one per node id), a version 1 file is smaller. A larger file is
// not one, and is refused before it is read into memory.
const maxStateSize = 2 * (stateSlotHead + (1<<16)*stateEntrySize + 4 + stateSlotAlign)

// readStateFile reads a state file of at most maxStateSize bytes that is
// a regular file.
func readStateFile(path string) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxStateSize {
		return nil, fmt.Errorf("state file %s: %d bytes, %w (%d at most): not a state file; remove it to start afresh (peers may then deliver acknowledged batches again)", path, fi.Size(), errStateSize, maxStateSize)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	return b, nil
}
