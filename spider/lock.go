package spider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DirLock is a node's hold on its data directory: one process per
// directory, since two nodes writing one URL tree and one store would
// corrupt both.
//
// The lock is flock(2) on DIR/LOCK, taken without waiting. The file holds
// the holder's pid (decimal, then a newline) so a refused process can say
// who holds it. The kernel drops a flock when its holder dies, however it
// dies, so a LOCK file left by a killed process is simply taken over: the
// file's presence means nothing, only the flock does. (A pid read from the
// file may be stale or, between another process's flock and its write,
// missing; it is only ever shown to the operator.)
type DirLock struct {
	f    *os.File
	path string
	// Previous is the pid a taken-over LOCK file named (a process that
	// ended without releasing it), 0 when the file was new or empty.
	Previous int
}

// ErrDirLocked is matched (errors.Is) by LockDir's error when another
// process holds the directory.
var ErrDirLocked = errors.New("data directory in use")

// DirLockedError says which process holds a data directory.
type DirLockedError struct {
	Dir string
	PID int // 0 when the holder has not written its pid yet
}

func (e *DirLockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("data directory %s is in use by another kspider process (its pid is not in %s yet)", e.Dir, filepath.Join(e.Dir, "LOCK"))
	}
	return fmt.Sprintf("data directory %s is in use by another kspider process, pid %d (%s)", e.Dir, e.PID, filepath.Join(e.Dir, "LOCK"))
}

func (e *DirLockedError) Is(target error) bool { return target == ErrDirLocked }

// LockDir creates dir if needed and locks it for this process, or returns
// a *DirLockedError naming the process that holds it.
func LockDir(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	path := filepath.Join(dir, "LOCK")
	f, err := openLockFile(path, os.O_CREATE)
	if err != nil {
		return nil, err
	}
	if err := flock(f); err != nil {
		pid := readPID(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &DirLockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock: flock %s: %w", path, err)
	}
	l := &DirLock{f: f, path: path, Previous: readPID(f)}
	if l.Previous == os.Getpid() {
		l.Previous = 0 // this process's own earlier, released lock
	}
	line := strconv.Itoa(os.Getpid()) + "\n"
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(line), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock: writing pid to %s: %w", path, err)
	}
	return l, nil
}

// CheckLockFile reports what LockDir would refuse in dir's LOCK (a link,
// a special file, a hard link to another file, one it may not write),
// without locking it or creating it: kspider check says so before the
// node's start does. The error matches fs.ErrNotExist when there is none,
// which the start creates. A lock held is not looked at: taking it even
// for a moment could make a node starting then refuse its directory.
func CheckLockFile(dir string) error {
	f, err := openLockFile(filepath.Join(dir, "LOCK"), 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// openLockFile opens the LOCK file at path for writing, with flag's
// O_CREATE if given, as LockDir must have it.
func openLockFile(path string, flag int) (*os.File, error) {
	// O_CLOEXEC (os.OpenFile's default) keeps children from inheriting
	// the flock and holding the directory after this process is gone.
	// Not through a link: the pid is written into the file, truncating
	// it, and a LOCK linked to another file (a system file, for a node
	// running as root) would have that file truncated.
	f, err := os.OpenFile(path, os.O_RDWR|flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("lock: %s is a symbolic link; a data directory's LOCK is a file of its own: remove the link", path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("lock: %s is not a file of its own (a special file, or a hard link to another file: %v): remove it", path, err)
	}
	return f, nil
}

func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

// readPID reads the pid a LOCK file holds, 0 if it holds none.
func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return 0
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Path is the lock file's path.
func (l *DirLock) Path() string { return l.path }

// Release empties the pid from the file and drops the lock. The file stays:
// removing it would let a process that opened it just before lock a file
// nobody else can see.
func (l *DirLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("lock: releasing %s: %w", l.path, err)
	}
	return nil
}
