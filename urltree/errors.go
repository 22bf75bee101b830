package urltree

import "errors"

// Errors the tree returns; wrapped errors name the file or URL involved.
var (
	ErrEmptyURL    = errors.New("urltree: empty URL")
	ErrURLTooLong  = errors.New("urltree: URL longer than the configured maximum")
	ErrReadOnly    = errors.New("urltree: tree is open read-only")
	ErrClosed      = errors.New("urltree: tree is closed")
	ErrFull        = errors.New("urltree: tree holds the maximum number of URLs (2^31)")
	ErrNewerFormat = errors.New("urltree: file written by a newer format version")
	ErrCorrupt     = errors.New("urltree: corrupt file")
	ErrNotFound    = errors.New("urltree: no URL with this id")
	ErrExists      = errors.New("urltree: a tree already exists in this directory")
	ErrNoTree      = errors.New("urltree: no tree in this directory")
)
