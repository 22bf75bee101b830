//go:build !linux

package stats

// isTerminal is false where kspider does not know the ioctl: no progress line.
func isTerminal(fd uintptr) bool { return false }

const isLinux = false
