package spider

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Linux limits a node meets at scale (thesis "Fine tuning"): every fetcher
// holds a connection, so a descriptor, and every connection it opens takes
// a local port that stays in TIME_WAIT for a minute after the node closes
// it. The usual defaults (1024 open files, ports 32768-60999) are far from
// what thousands of fetchers need.

// PortRangeFile is where Linux keeps the local (ephemeral) port range.
const PortRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// filesReserve is the descriptors a node needs besides its fetchers'
// connections: URL tree and store files (a few per storage directory),
// DNS and NTP sockets, the communicator, the status server and its
// clients, robots.txt fetches, and connections being replaced.
const filesReserve = 512

// portsPerFetcher is the local ports a fetcher may hold at once: its
// connection and the ones it closed in the last minute (TIME_WAIT), as a
// fetcher moving through small hosts opens several connections a minute.
const portsPerFetcher = 4

// FilesNeeded is the open-files limit fetchers need.
func FilesNeeded(fetchers int) uint64 { return uint64(max(fetchers, 0)) + filesReserve }

// PortsNeeded is the size of local port range fetchers need.
func PortsNeeded(fetchers int) int { return max(fetchers, 0) * portsPerFetcher }

// RaiseOpenFiles raises this process's soft RLIMIT_NOFILE to its hard
// limit (no privilege needed) and returns the soft limit before and after.
// When the hard limit is unlimited, the kernel's ceiling (fs.nr_open) is
// asked for instead.
func RaiseOpenFiles() (before, after uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	before = lim.Cur
	if lim.Cur >= lim.Max {
		return before, before, nil
	}
	want := lim
	want.Cur = lim.Max
	if lim.Max == unix.RLIM_INFINITY {
		if n, err := readUint("/proc/sys/fs/nr_open"); err == nil {
			want.Cur = n
		}
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		return before, before, fmt.Errorf("setrlimit(RLIMIT_NOFILE) from %d to %d: %w", before, want.Cur, err)
	}
	return before, want.Cur, nil
}

// OpenFilesLimit returns this process's soft and hard RLIMIT_NOFILE.
func OpenFilesLimit() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	return lim.Cur, lim.Max, nil
}

// ReadPortRange reads a file in the format of PortRangeFile: two port
// numbers separated by white space.
func ReadPortRange(path string) (lo, hi int, err error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, 0, err
	}
	f := bytes.Fields(b)
	if len(f) == 2 {
		lo, err1 := strconv.Atoi(string(f[0]))
		hi, err2 := strconv.Atoi(string(f[1]))
		if err1 == nil && err2 == nil && lo >= 1 && lo <= hi && hi <= 65535 {
			return lo, hi, nil
		}
	}
	return 0, 0, fmt.Errorf("%s: %q is not a port range \"LOW HIGH\"", path, bytes.TrimSpace(b))
}

// LimitWarnings says, naming the figures, which of an open-files limit and
// the local port range in portRangePath is too small for fetchers (or that
// the range could not be read). openFiles 0 means unknown.
func LimitWarnings(fetchers int, openFiles uint64, portRangePath string) []string {
	var w []string
	if need := FilesNeeded(fetchers); openFiles > 0 && openFiles < need {
		w = append(w, fmt.Sprintf("open-files limit %d is below the %d that %d fetchers need (%d + %d); "+
			"raise the hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit) or lower fetchers",
			openFiles, need, fetchers, fetchers, filesReserve))
	}
	lo, hi, err := ReadPortRange(portRangePath)
	switch {
	case err != nil:
		w = append(w, fmt.Sprintf("local port range unknown: %v", err))
	case hi-lo+1 < PortsNeeded(fetchers):
		w = append(w, fmt.Sprintf("local port range %d-%d (%d ports) is below the %d that %d fetchers need (%d each, for connections in TIME_WAIT); "+
			"widen it: sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"",
			lo, hi, hi-lo+1, PortsNeeded(fetchers), fetchers, portsPerFetcher))
	}
	return w
}

// CheckLimits is what a node does at start: raise the open-files limit and
// return the warnings for its fetchers, each reading bodies of up to
// maxBody bytes (limits.max_body).
func CheckLimits(fetchers int, maxBody int64) []string {
	var w []string
	_, soft, err := RaiseOpenFiles()
	if err != nil {
		w = append(w, err.Error())
	}
	w = append(w, LimitWarnings(fetchers, soft, PortRangeFile)...)
	return append(w, MemoryWarnings(fetchers, maxBody, "/")...)
}

func readUint(path string) (uint64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

// readSmall reads at most 4 KiB of a /proc-like file.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4<<10))
}
