//go:build unix

package main

import "syscall"

// openFilesLimit is this process's soft RLIMIT_NOFILE, which Go raises to
// the hard limit at start; 0 when unlimited or unknown.
func openFilesLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || uint64(lim.Cur) == ^uint64(0) {
		return 0
	}
	return uint64(lim.Cur)
}
