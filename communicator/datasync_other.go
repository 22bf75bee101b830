//go:build !linux

package communicator

import "os"

// fdatasync is fsync where the system has no fdatasync call for Go.
func fdatasync(f *os.File) error { return f.Sync() }
