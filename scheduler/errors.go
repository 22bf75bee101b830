package scheduler

import "errors"

// Errors the scheduler returns; wrapped errors name the file, offset, id or
// host involved.
var (
	ErrCorrupt     = errors.New("scheduler: corrupt file")
	ErrNewerFormat = errors.New("scheduler: file written by a newer format version")
	ErrClosed      = errors.New("scheduler: closed")
	ErrNotInFlight = errors.New("scheduler: URL is not in a list handed out")
	ErrBadHost     = errors.New("scheduler: bad host name")
	ErrUnknownHost = errors.New("scheduler: no such host number")
	ErrUnknownURL  = errors.New("scheduler: URL id never added")
	ErrBadID       = errors.New("scheduler: bad URL id")
	ErrConfig      = errors.New("scheduler: bad configuration")
	ErrLocked      = errors.New("scheduler: in use by another Scheduler (the meta file is locked)")
	ErrForeign     = errors.New("scheduler: files of another URL tree")
)
