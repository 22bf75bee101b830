package scheduler

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mappedFile is one array file mapped into memory in full. It grows by
// reserving disk blocks with fallocate first and remapping afterwards, so
// a full disk is an error from grow rather than a SIGBUS on a later store.
type mappedFile struct {
	path string
	f    *os.File
	data []byte // the whole file, shared mapping
	// syncErr is the first fdatasync that failed: every later sync
	// returns it. The kernel may drop the pages it could not write and
	// reports that once, so the next fdatasync succeeds over the loss,
	// and a commit after it would cover records the disk may not hold.
	syncErr error
	// datasync is fdatasync (nil: unix.Fdatasync; tests make it fail).
	datasync func(fd int) error
}

// minFileSize is the smallest size a file grows to; growth is then
// proportional (1/4) so remaps stay rare without much preallocated space.
const minFileSize = 64 << 10

// createMapped creates path with a header of the given magic and ID.
func createMapped(path string, magic [8]byte, id [16]byte) (*mappedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	m := &mappedFile{path: path, f: f}
	if err := m.ensure(headerSize); err != nil {
		m.close()
		return nil, err
	}
	putHeader(m.data, magic, id)
	return m, nil
}

// openRegular opens path, which must be a regular file: a FIFO in a
// scheduler file's place blocked the open (Check's, or Open's look at
// what a crash in create left) for good, in a wait no signal but SIGKILL
// ends, and a device would be read as the file. Anything else is an
// error wrapping ErrCorrupt, naming it.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s: not a regular file but a %v: move it away", ErrCorrupt, path, fi.Mode().Type())
	}
	return f, nil
}

// openMapped maps an existing file and checks its header. need is where
// the commit says its durable part ends.
func openMapped(path string, magic [8]byte, need uint64) (*mappedFile, error) {
	f, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	m := &mappedFile{path: path, f: f}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	size := fi.Size()
	if size >= headerSize {
		if size, err = reserveFile(f, path, size, need); err != nil {
			f.Close()
			return nil, err
		}
		if err := m.mapSize(size); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := checkHeader(path, m.data, magic); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}

// reserveFile makes every byte of a file Open maps backed by disk
// blocks, as ensure does when it grows one, and returns its size. A file
// extended with zeros (sparse) had holes there instead, and on a full
// disk a store into one (a URL's record) killed the process with SIGBUS:
// the file is cut back to where its data, or the commit (need), ends
// (past both lie only holes) and what remains is reserved.
func reserveFile(f *os.File, path string, size int64, need uint64) (int64, error) {
	keep := dataEnd(f, 0, size)
	if need < uint64(size) {
		keep = max(keep, int64(need))
	} else {
		keep = size
	}
	if keep = min((keep+4095)&^4095, size); keep < size {
		if err := f.Truncate(keep); err != nil {
			return 0, fmt.Errorf("scheduler: cut %s back to its data (%d bytes): %w", path, keep, err)
		}
		size = keep
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return 0, fmt.Errorf("scheduler: reserve %s (%d bytes): %w", path, size, err)
	}
	return size, nil
}

func (m *mappedFile) mapSize(size int64) error {
	if size != int64(int(size)) {
		return fmt.Errorf("scheduler: %s: file of %d bytes is too large to map", m.path, size)
	}
	data, err := unix.Mmap(int(m.f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("scheduler: mmap %s (%d bytes): %w", m.path, size, err)
	}
	m.data = data
	return nil
}

// ensure makes the file at least n bytes long and mapped.
func (m *mappedFile) ensure(n int64) error {
	if n <= int64(len(m.data)) {
		return nil
	}
	old := int64(len(m.data))
	size := max(n, old+old/4, minFileSize)
	size = (size + 4095) &^ 4095
	if err := unix.Fallocate(int(m.f.Fd()), 0, old, size-old); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			// Some filesystems cannot reserve blocks; writing zeros
			// reserves them just as well, only more slowly.
			err = m.zeroFill(old, size)
		}
		if err != nil {
			return fmt.Errorf("scheduler: grow %s to %d bytes: %w", m.path, size, err)
		}
	}
	if m.data != nil {
		if err := unix.Munmap(m.data); err != nil {
			return fmt.Errorf("scheduler: munmap %s: %w", m.path, err)
		}
		m.data = nil
	}
	if err := m.mapSize(size); err != nil {
		if old > 0 {
			if m.mapSize(old) != nil {
				m.data = nil
			}
		}
		return err
	}
	return nil
}

func (m *mappedFile) zeroFill(from, to int64) error {
	zeros := make([]byte, 64<<10)
	for off := from; off < to; {
		n := min(int64(len(zeros)), to-off)
		if _, err := m.f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

func (m *mappedFile) sync() error {
	if m.syncErr != nil {
		return m.syncErr
	}
	datasync := m.datasync
	if datasync == nil {
		datasync = unix.Fdatasync
	}
	// On Linux the pages of a shared mapping live in the page cache, so
	// fdatasync writes them back just as msync(MS_SYNC) would. Sync calls
	// this without the scheduler's lock (under its syncMu): Control holds
	// the descriptor open meanwhile, so a close cannot hand its number to
	// another file.
	rc, err := m.f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = datasync(int(fd)) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		m.syncErr = fmt.Errorf("scheduler: sync %s failed, so what was written to it since the last commit may be lost (no later commit will cover it; the next start reads the files from that commit): %w", m.path, err)
		return m.syncErr
	}
	return nil
}

func (m *mappedFile) close() error {
	var err error
	if m.data != nil {
		err = unix.Munmap(m.data)
		m.data = nil
	}
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("scheduler: close %s: %w", m.path, err)
	}
	return nil
}

// dataEnd returns where the file's data ends at or after offset from:
// past it lie only holes, which read as zeros (so do extents fallocate
// reserved and nothing wrote). Open and Check scan the records past the
// commit up to here, not over a file extended with zeros: a sparse 16 GB
// took Open 42 s. Without SEEK_DATA it is the file's size.
func (m *mappedFile) dataEnd(from int64) int64 { return dataEnd(m.f, from, int64(len(m.data))) }

func dataEnd(f *os.File, from, size int64) int64 {
	end := from
	rc, err := f.SyscallConn()
	if err != nil {
		return size
	}
	cerr := rc.Control(func(fd uintptr) {
		for off := from; off < size; {
			d, err := unix.Seek(int(fd), off, unix.SEEK_DATA)
			if errors.Is(err, unix.ENXIO) {
				return // nothing but holes from off on
			}
			if err != nil {
				end = size
				return
			}
			h, err := unix.Seek(int(fd), d, unix.SEEK_HOLE)
			if err != nil {
				end = size
				return
			}
			end, off = h, h
		}
	})
	if cerr != nil {
		return size
	}
	return min(end, size)
}

// scanRecords is recs, the records of a states file, cut where the file's
// data ends (dataEnd), but never inside the durable ones.
func scanRecords(recs []record, durable uint64, dataEnd func(from int64) int64) []record {
	from := headerSize + int64(min(durable, uint64(len(recs))))*recordSize
	if end := (dataEnd(from) - headerSize + recordSize - 1) / recordSize; end < int64(len(recs)) {
		return recs[:max(end, 0)]
	}
	return recs
}
