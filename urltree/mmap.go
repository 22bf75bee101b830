package urltree

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
	path     string
	f        *os.File
	data     []byte // the whole file, shared mapping
	readOnly bool
}

// minFileSize is the smallest size a file grows to; growth is then
// proportional (1/4) so remaps stay rare without much preallocated space.
const minFileSize = 64 << 10

func openMapped(path string, readOnly, create bool) (*mappedFile, error) {
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := openRegular(path, flag)
	if err != nil {
		return nil, err
	}
	m := &mappedFile{path: path, f: f, readOnly: readOnly}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("urltree: %w", err)
	}
	size := fi.Size()
	if !readOnly && !create && size > 0 {
		if size, err = reserveFile(f, path, size); err != nil {
			f.Close()
			return nil, err
		}
	}
	if size > 0 {
		if err := m.mapSize(size); err != nil {
			f.Close()
			return nil, err
		}
	}
	return m, nil
}

// reserveFile makes every byte of a file a writer maps backed by disk
// blocks, as ensure does when it grows one, and returns its size. A file
// extended with zeros (sparse) had holes there instead, and on a full
// disk a store into one killed the process with SIGBUS: the file is cut
// back to where its data ends (nothing but holes lie past it) and what
// remains is reserved.
func reserveFile(f *os.File, path string, size int64) (int64, error) {
	end := (dataEnd(f, 0, size) + 4095) &^ 4095
	if keep := max(end, minFileSize); keep < size {
		if err := f.Truncate(keep); err != nil {
			return 0, fmt.Errorf("urltree: cut %s back to its data (%d bytes): %w", path, keep, err)
		}
		size = keep
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return 0, fmt.Errorf("urltree: reserve %s (%d bytes): %w", path, size, err)
	}
	return size, nil
}

// openRegular opens path, which must be a regular file: a FIFO in a tree
// file's place blocked the open (a reader's, Check's, a writer's creating
// the tree) for good, in a wait no signal but SIGKILL ends, and a device
// would be mapped as the file. Anything else is a *CorruptError naming it.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("urltree: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("urltree: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, corrupt(path, 0, "not a regular file but a %v: move it away", fi.Mode().Type())
	}
	return f, nil
}

func (m *mappedFile) mapSize(size int64) error {
	if size != int64(int(size)) {
		return fmt.Errorf("urltree: %s: file of %d bytes is too large to map", m.path, size)
	}
	prot := unix.PROT_READ
	if !m.readOnly {
		prot |= unix.PROT_WRITE
	}
	data, err := unix.Mmap(int(m.f.Fd()), 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("urltree: mmap %s (%d bytes): %w", m.path, size, err)
	}
	m.data = data
	return nil
}

// ensure makes the file at least n bytes long and mapped.
func (m *mappedFile) ensure(n int64) error {
	if n <= int64(len(m.data)) {
		return nil
	}
	if m.readOnly {
		return ErrReadOnly
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
			return fmt.Errorf("urltree: grow %s to %d bytes: %w", m.path, size, err)
		}
	}
	if m.data != nil {
		if err := unix.Munmap(m.data); err != nil {
			return fmt.Errorf("urltree: munmap %s: %w", m.path, err)
		}
		m.data = nil
	}
	if err := m.mapSize(size); err != nil {
		// Keep the old mapping if at all possible; if not, data stays
		// nil and the tree refuses further use (Tree.reserve).
		if old > 0 {
			m.mapSize(old)
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
	if m.readOnly {
		return nil
	}
	// On Linux the pages of a shared mapping live in the page cache, so
	// fdatasync writes them back just as msync(MS_SYNC) would. Sync calls
	// this without the tree's lock: Control holds the descriptor open
	// meanwhile, so a close (a failed remap closes the files) cannot hand
	// its number to another file.
	rc, err := m.f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = unix.Fdatasync(int(fd)) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("urltree: sync %s: %w", m.path, err)
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
		return fmt.Errorf("urltree: close %s: %w", m.path, err)
	}
	return nil
}

// dataEnd returns where the file's data ends at or after offset from:
// past it lie only holes, which read as zeros (so do extents fallocate
// reserved and nothing wrote). Without SEEK_DATA it is the mapping's end.
func (m *mappedFile) dataEnd(from int64) int64 { return dataEnd(m.f, from, int64(len(m.data))) }

// dataEnd is mappedFile.dataEnd for the file f of the given size.
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
