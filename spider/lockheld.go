package spider

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockHolder reports the process holding dir's LOCK, as the kernel lists
// its flocks (/proc/locks), without taking the lock even for a moment (a
// node starting then would refuse its directory) and without writing
// anything. held is false when none holds it, or when the kernel's list
// cannot be read (not Linux): kspider check then says nothing of it.
func LockHolder(dir string) (pid int, held bool) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "LOCK"), &st); err != nil {
		return 0, false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF": the device's
	// major and minor in hex, the inode in decimal.
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, _ = strconv.Atoi(fields[4])
		return pid, true
	}
	return 0, false
}
