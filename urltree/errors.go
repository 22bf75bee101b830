package urltree

import (
	"errors"
	"fmt"
)

// Errors the tree returns; wrapped errors name the file or URL involved.
var (
	ErrEmptyURL    = errors.New("urltree: empty URL")
	ErrURLTooLong  = errors.New("urltree: URL longer than the configured maximum")
	ErrReadOnly    = errors.New("urltree: tree is open read-only")
	ErrClosed      = errors.New("urltree: tree is closed")
	ErrFull        = errors.New("urltree: tree holds the maximum number of URLs (2^31)")
	ErrNewerFormat = errors.New("urltree: file written by a newer format version")
	ErrOldFormat   = errors.New("urltree: file written by an older format version")
	ErrCorrupt     = errors.New("urltree: corrupt file")
	ErrNotFound    = errors.New("urltree: no URL with this id")
	ErrLost        = errors.New("urltree: URL lost to damage (a repair could not recover it)")
	ErrExists      = errors.New("urltree: a tree already exists in this directory")
	ErrNoTree      = errors.New("urltree: no tree in this directory")
	ErrLocked      = errors.New("urltree: tree in use by another writer (its meta file is locked)")
	ErrForeign     = errors.New("urltree: file of another tree")
)

// CorruptError is the error for damage found in a file: which file, at
// which byte offset, and what is wrong there. It wraps ErrCorrupt.
type CorruptError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damaged structure in it
	What   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("urltree: corrupt file: %s: offset %d: %s", e.File, e.Offset, e.What)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(file string, off uint64, format string, args ...any) *CorruptError {
	return &CorruptError{File: file, Offset: int64(off), What: fmt.Sprintf(format, args...)}
}
