package spider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// MemInfoFile is where Linux says how much memory the machine has.
const MemInfoFile = "/proc/meminfo"

// ReadMemTotal reads the MemTotal line of a file in the format of
// MemInfoFile, in bytes.
func ReadMemTotal(path string) (uint64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "MemTotal:" && string(f[2]) == "kB" {
			if kb, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil && kb > 0 && kb < 1<<50 {
				return kb << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no line \"MemTotal: N kB\" in its first %d bytes", path, len(b))
}

// CgroupMemoryLimit returns the smallest memory limit set on the cgroup
// of this process or on one of its ancestors, and the file that sets it:
// cgroup v2's memory.max under root/sys/fs/cgroup, v1's
// memory.limit_in_bytes under root/sys/fs/cgroup/memory, the cgroup named
// in root/proc/self/cgroup (root is "/" but in tests). A container's
// limit is far below the machine's MemTotal, and a node above it is
// killed as surely as one above MemTotal. No limit ("max", or no cgroup
// files) is 0 and no error; a limit file that is not a number is an
// error naming it.
func CgroupMemoryLimit(root string) (limit uint64, from string, err error) {
	self := filepath.Join(root, "proc/self/cgroup")
	b, err := readSmall(self)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var base, file string
		switch {
		case f[0] == "0" && f[1] == "":
			base, file = filepath.Join(root, "sys/fs/cgroup"), "memory.max"
		case f[1] != "" && slices.Contains(strings.Split(f[1], ","), "memory"):
			base, file = filepath.Join(root, "sys/fs/cgroup/memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		// The group and each ancestor up to the hierarchy's root: a
		// limit on a parent (a container's, the group of a systemd
		// slice) binds its children, whose own files say "max".
		for dir := filepath.Clean("/" + f[2]); ; dir = filepath.Dir(dir) {
			path := filepath.Join(base, dir, file)
			n, err := readCgroupLimit(path)
			if err != nil {
				return 0, "", err
			}
			if n > 0 && (limit == 0 || n < limit) {
				limit, from = n, path
			}
			if dir == "/" {
				break
			}
		}
	}
	return limit, from, nil
}

// readCgroupLimit reads a cgroup memory limit file: 0 when it is
// missing or says "max".
func readCgroupLimit(path string) (uint64, error) {
	b, err := readSmall(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	text := strings.TrimSpace(string(b))
	if text == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %.40q is not a memory limit (a number of bytes, or max)", path, text)
	}
	return n, nil
}

// MemoryWarnings says, naming the figures, when fetchers each holding a
// body of maxBody bytes, as they may at once, would need more than the
// memory this process may use: the machine's (root/proc/meminfo's
// MemTotal) or its cgroup's limit when smaller (CgroupMemoryLimit), or
// that the memory could not be read. The node would then be killed for
// want of memory mid-crawl, at the first few hosts serving large bodies,
// rather than warned at its start with the figures that cause it. root
// is "/" but in tests.
func MemoryWarnings(fetchers int, maxBody int64, root string) []string {
	total, err := ReadMemTotal(filepath.Join(root, MemInfoFile))
	if err != nil {
		return []string{fmt.Sprintf("machine memory unknown (fetchers × limits.max_body not checked): %v", err)}
	}
	var w []string
	avail, of := total, fmt.Sprintf("this machine's memory (%s)", bytesText(float64(total)))
	switch limit, from, err := CgroupMemoryLimit(root); {
	case err != nil:
		w = append(w, fmt.Sprintf("cgroup memory limit unknown (fetchers × limits.max_body checked against the machine's memory only): %v", err))
	case limit > 0 && limit < total:
		avail = limit
		of = fmt.Sprintf("the memory this process may use (%s, its cgroup's limit in %s; the machine has %s)",
			bytesText(float64(limit)), from, bytesText(float64(total)))
	}
	need := float64(max(fetchers, 0)) * float64(max(maxBody, 0))
	if need <= float64(avail) {
		return w
	}
	return append(w, fmt.Sprintf("fetchers × limits.max_body: %d × %s = %s is above %s: each fetcher may hold a body of limits.max_body at once, "+
		"and a crawl meeting large bodies is killed for want of memory; lower fetchers or limits.max_body",
		fetchers, bytesText(float64(maxBody)), bytesText(need), of))
}

// bytesText is n bytes in the largest binary unit below it, as 1.5 GiB.
func bytesText(n float64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"}
	u := 0
	for n >= 1024 && u < len(units)-1 {
		n /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%.0f bytes", n)
	}
	return fmt.Sprintf("%.3g %s", n, units[u])
}
