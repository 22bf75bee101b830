//go:build !unix

package main

// openFilesLimit is 0, unknown: no RLIMIT_NOFILE here.
func openFilesLimit() uint64 { return 0 }
