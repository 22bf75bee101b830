package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// segmentHeader starts every segment file:
//
//	off len field
//	  0   4 magic    "KSPS"
//	  4   4 version  segmentVersion (uint32, little-endian)
//	  8   4 number   the segment's number, as in its file name
//	 12   4 reserved 0
//
// Records follow from byte segmentHeaderSize on.
const (
	segmentMagic      = "KSPS"
	segmentVersion    = 1
	segmentHeaderSize = 16
	segmentSuffix     = ".seg"
)

func segmentName(n uint32) string { return fmt.Sprintf("%08d%s", n, segmentSuffix) }

func encodeSegmentHeader(n uint32) []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b, segmentMagic)
	binary.LittleEndian.PutUint32(b[4:], segmentVersion)
	binary.LittleEndian.PutUint32(b[8:], n)
	return b
}

// checkSegmentHeader verifies the header b read from segment number n.
func checkSegmentHeader(b []byte, n uint32) error {
	if len(b) < segmentHeaderSize {
		return fmt.Errorf("%w: segment header of %d bytes", ErrCorrupt, len(b))
	}
	if string(b[:4]) != segmentMagic {
		return fmt.Errorf("%w: not a segment (magic %q)", ErrCorrupt, b[:4])
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != segmentVersion {
		return fmt.Errorf("%w: unknown segment format version %d", ErrCorrupt, v)
	}
	if got := binary.LittleEndian.Uint32(b[8:]); got != n {
		return fmt.Errorf("%w: segment header says number %d", ErrCorrupt, got)
	}
	return nil
}

// listSegments returns the numbers of the segment files in dir, ascending.
// Files that merely look similar are ignored.
func listSegments(dir string) ([]uint32, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	var nums []uint32
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segmentSuffix) || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, segmentSuffix), 10, 32)
		if err != nil || n == 0 || segmentName(uint32(n)) != name {
			continue
		}
		nums = append(nums, uint32(n))
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums, nil
}

func segmentPath(dir string, n uint32) string { return filepath.Join(dir, segmentName(n)) }

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
