package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// segmentHeader starts every segment file:
//
//	off len field
//	  0   4 magic    "KSPS"
//	  4   4 version  segmentVersion (uint32, little-endian)
//	  8   4 number   the segment's number, as in its file name
//	 12   4 crc      CRC-32C of bytes 0…11 (versions 2 and 3; version 1 has 0 here)
//	 16  16 store    the ID of the store written to (version 3; zero: none)
//	 32   4 reserved 0 (version 3)
//	 36   4 crc      CRC-32C of bytes 0…35 (version 3)
//
// Records follow the header: from byte 16 in versions 1 and 2, from byte
// segmentHeaderSize in version 3; their format is the same in all, so
// older segments are read as they are. A kspider reading versions 1 and 2
// only finds bytes 0…15 intact and refuses version 3 by its number.
const (
	segmentMagic        = "KSPS"
	segmentVersion      = 3
	segmentHeaderSize   = 40
	segmentHeaderV2Size = 16 // versions 1 and 2
	segmentSuffix       = ".seg"
)

func segmentName(n uint32) string { return fmt.Sprintf("%08d%s", n, segmentSuffix) }

// encodeSegmentHeader is the header of segment n of store id.
func encodeSegmentHeader(n uint32, id storeID) []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b, segmentMagic)
	binary.LittleEndian.PutUint32(b[4:], segmentVersion)
	binary.LittleEndian.PutUint32(b[8:], n)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	copy(b[16:], id[:])
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(b[:36], castagnoli))
	return b
}

// ErrVersion marks a file written in a format this kspider does not read:
// intact (its checksum holds) but newer. Errors wrapping it name the file,
// the version found and the versions supported.
var ErrVersion = errors.New("unsupported format version")

// segmentHeaderInfo is what a segment's header says.
type segmentHeaderInfo struct {
	version uint32
	store   storeID // zero before version 3
	size    int64   // where the records begin
}

// checkSegmentHeader verifies the header b (the file's first bytes, up to
// segmentHeaderSize of them) read from segment number n. A damaged header
// is an error wrapping ErrCorrupt: the records behind it carry their own
// checksums and are still read, from where its version says they begin
// (h.size is set then too). An intact header of a version this code does
// not know wraps ErrVersion.
func checkSegmentHeader(b []byte, n uint32) (h segmentHeaderInfo, err error) {
	h.size = segmentHeaderV2Size
	if len(b) < segmentHeaderV2Size {
		return h, fmt.Errorf("%w: segment header of %d bytes", ErrCorrupt, len(b))
	}
	v := binary.LittleEndian.Uint32(b[4:])
	crc := binary.LittleEndian.Uint32(b[12:])
	crcOK := crc == crc32.Checksum(b[:12], castagnoli)
	if v == segmentVersion {
		h.size = segmentHeaderSize
	}
	switch {
	case string(b[:4]) != segmentMagic:
		return h, fmt.Errorf("%w: not a segment header (magic %q)", ErrCorrupt, b[:4])
	case v == 1 && crc == 0:
		// Version 1 had no checksum: check what can be checked.
	case !crcOK:
		return h, fmt.Errorf("%w: segment header CRC-32C mismatch", ErrCorrupt)
	case v != 2 && v != segmentVersion:
		return h, fmt.Errorf("%w: segment format version %d, this kspider reads versions 1 to %d", ErrVersion, v, segmentVersion)
	case v == segmentVersion && len(b) < segmentHeaderSize:
		return h, fmt.Errorf("%w: segment header of %d bytes, version %d's has %d", ErrCorrupt, len(b), v, segmentHeaderSize)
	case v == segmentVersion && binary.LittleEndian.Uint32(b[36:]) != crc32.Checksum(b[:36], castagnoli):
		return h, fmt.Errorf("%w: segment header CRC-32C mismatch (its store ID)", ErrCorrupt)
	}
	if got := binary.LittleEndian.Uint32(b[8:]); got != n {
		return h, fmt.Errorf("%w: segment header says number %d", ErrCorrupt, got)
	}
	h.version = v
	if v == segmentVersion {
		copy(h.store[:], b[16:32])
	}
	return h, nil
}

// foreignSegment is the error for a segment of store got read as one of
// store want.
func foreignSegment(got, want storeID) error {
	return fmt.Errorf("%w segment: it belongs to store %v, this is store %v (copied in from another store?)", ErrForeign, got, want)
}

// readSegmentHeader reads and checks the header of segment n at path.
func readSegmentHeader(path string, n uint32) (segmentHeaderInfo, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return segmentHeaderInfo{}, err
	}
	defer f.Close()
	b := make([]byte, segmentHeaderSize)
	k, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return segmentHeaderInfo{}, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	h, err := checkSegmentHeader(b[:k], n)
	if err != nil {
		return h, fmt.Errorf("storage: %s: %w", path, err)
	}
	return h, nil
}

// listSegments returns the numbers of the segment files in dir, ascending.
// Files that merely look similar are ignored.
func listSegments(dir string) ([]uint32, error) {
	nums, _, err := listSegmentNames(dir)
	return nums, err
}

// listSegmentNames returns the numbers of the segment files in dir and
// those of the names of segments under which something else stands (a
// link, a FIFO, a directory: never opened here), both ascending.
func listSegmentNames(dir string) (nums, odd []uint32, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: %w", err)
	}
	for _, e := range ents {
		n, ok := segmentNumber(e.Name())
		switch {
		case ok && e.Type().IsRegular():
			nums = append(nums, n)
		case ok:
			odd = append(odd, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	sort.Slice(odd, func(i, j int) bool { return odd[i] < odd[j] })
	return nums, odd, nil
}

// HoldsPages reports whether dir holds a segment with anything past its
// header: a store that pages were written to. URL ids are a node's URL
// tree's, so a node whose tree is new must not write into such a store:
// its records would name other URLs under the same ids (spider refuses).
// A directory that does not exist holds none.
func HoldsPages(dir string) (bool, error) {
	nums, err := listSegments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, n := range nums {
		path := segmentPath(dir, n)
		fi, err := os.Stat(path)
		if err != nil {
			return false, fmt.Errorf("storage: %w", err)
		}
		// A damaged header counts as long as its version field says:
		// what is beyond it is pages, or damage kspider check reports.
		h, _ := readSegmentHeader(path, n)
		if fi.Size() > max(h.size, segmentHeaderV2Size) {
			return true, nil
		}
	}
	return false, nil
}

func segmentPath(dir string, n uint32) string { return filepath.Join(dir, segmentName(n)) }

// segmentNumber returns the number of the segment named name, if it is
// one's name exactly as segmentName writes it.
func segmentNumber(name string) (uint32, bool) {
	if !strings.HasSuffix(name, segmentSuffix) {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 32)
	if err != nil || n == 0 || segmentName(uint32(n)) != name {
		return 0, false
	}
	return uint32(n), true
}

// openRegular opens path, which must be a regular file. A named pipe in
// its place would block the open until something writes to it (forever),
// and a device or a directory is no store file either: such a file is an
// error wrapping ErrCorrupt, naming what it is. With unix.O_NOFOLLOW in
// flag, so is a symbolic link.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) && flag&unix.O_NOFOLLOW != 0 {
		return nil, fmt.Errorf("storage: %s: %w: a symbolic link, not a file of the store's own", path, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("storage: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("storage: %s: %w: not a regular file (%v)", path, ErrCorrupt, fi.Mode().Type())
	}
	return f, nil
}

// createTemp creates path, a temporary file of the store's own naming
// (url.idx.tmp, NNNNNNNN.seg.repair), anew. Whatever is there - left by a
// crash, or a symbolic link someone put there - is removed first and the
// file is created without following links: opened with O_TRUNC through a
// link, another file (a system file, for a node run as root) would be
// truncated and overwritten, and the rename after it would install the
// link in the store.
func createTemp(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("storage: removing the leftover temporary file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return f, nil
}

// openLock opens (creating it) the directory's LOCK file at path, to be
// flock(2)ed. It is never followed as a link: a LOCK made a link to a
// file elsewhere (/etc/nologin, for a node run as root) would have that
// file created; a special file or a hard link is refused too.
func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("storage: %s is a symbolic link; a data directory's LOCK is a file of its own: remove the link", path)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("storage: %s is not a file of its own (a special file, or a hard link to another file: %v): remove it", path, err)
	}
	return f, nil
}

// syncDir makes a file's creation or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
