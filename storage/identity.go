package storage

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// storeID names one store: made at random by the first Store to open it,
// kept in each of its data directories (the STORE file) and in the header
// of each segment written since (format version 3). The zero ID is none:
// a store or a segment from before identities, not checked.
type storeID [16]byte

func (id storeID) String() string { return fmt.Sprintf("%x", id[:]) }

// ErrForeign marks a data directory or a segment of another store than
// the one being read or written (copied in, or a directory listed with
// another store's): its records' URL ids are another URL tree's.
var ErrForeign = errors.New("another store's")

// The STORE file of a data directory:
//
//	off len field
//	  0   4 magic    "KSPD"
//	  4   4 version  storeFileVersion (uint32, little-endian)
//	  8  16 the store's ID
//	 24   4 crc      CRC-32C of bytes 0…23
const (
	storeFileName    = "STORE"
	storeFileMagic   = "KSPD"
	storeFileVersion = 1
	storeFileSize    = 28
)

// readStoreFile returns the ID in dir's STORE file, zero if there is none.
// A damaged file is an error wrapping ErrCorrupt, one of a newer version
// ErrVersion.
func readStoreFile(dir string) (storeID, error) {
	var id storeID
	path := filepath.Join(dir, storeFileName)
	f, err := openRegular(path, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return id, nil
	}
	if err != nil {
		return id, err
	}
	defer f.Close()
	b := make([]byte, storeFileSize+1)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return id, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	b = b[:n]
	switch {
	case n != storeFileSize:
		return id, fmt.Errorf("storage: %s: %w: a file of %d bytes, not %d", path, ErrCorrupt, n, storeFileSize)
	case string(b[:4]) != storeFileMagic:
		return id, fmt.Errorf("storage: %s: %w: not a store's identity (magic %q)", path, ErrCorrupt, b[:4])
	case binary.LittleEndian.Uint32(b[24:]) != crc32.Checksum(b[:24], castagnoli):
		return id, fmt.Errorf("storage: %s: %w: CRC-32C mismatch", path, ErrCorrupt)
	case binary.LittleEndian.Uint32(b[4:]) != storeFileVersion:
		return id, fmt.Errorf("storage: %s: %w: format version %d, this kspider reads version %d", path, ErrVersion, binary.LittleEndian.Uint32(b[4:]), storeFileVersion)
	}
	copy(id[:], b[8:24])
	return id, nil
}

// writeStoreFile writes dir's STORE file durably: under a temporary name,
// synced, renamed into place, the directory synced.
func writeStoreFile(dir string, id storeID) error {
	path := filepath.Join(dir, storeFileName)
	b := make([]byte, storeFileSize)
	copy(b, storeFileMagic)
	binary.LittleEndian.PutUint32(b[4:], storeFileVersion)
	copy(b[8:], id[:])
	binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(b[:24], castagnoli))
	f, err := createTemp(path + ".tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("storage: writing %s: %w", path, err)
	}
	return nil
}

// dirStoreID returns the ID of the store dir belongs to and what says so:
// its STORE file, or, with none there (a store from before identities, or
// the file lost), the segments naming one (segments naming two stores are
// an error wrapping ErrForeign naming both). Zero: none known. A
// damaged STORE file is an error, unless damaged is not nil: it is told
// of it, and the segments say instead.
func dirStoreID(dir string, damaged func(error)) (id storeID, from string, err error) {
	id, err = readStoreFile(dir)
	switch {
	case errors.Is(err, ErrCorrupt) && damaged != nil:
		damaged(err)
	case err != nil || id != (storeID{}):
		return id, filepath.Join(dir, storeFileName), err
	}
	nums, err := listSegments(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return id, "", err
	}
	// Every segment is asked: one of another store copied in must not
	// make the directory that store's, its own segments foreign.
	for i := len(nums) - 1; i >= 0; i-- {
		path := segmentPath(dir, nums[i])
		h, err := readSegmentHeader(path, nums[i])
		switch {
		case err != nil || h.store == (storeID{}):
		case id == (storeID{}):
			id, from = h.store, path
		case h.store != id:
			return storeID{}, "", fmt.Errorf("storage: %s: %w segment: %s names store %v, but %s store %v, and no STORE file says which is this directory's; move the other store's segment out", dir, ErrForeign, path, h.store, from, id)
		}
	}
	return id, from, nil
}

// storeIDOf returns the one store the data directories dirs belong to
// (zero if none says) and the file saying so. Directories of two stores
// are an error wrapping ErrForeign naming both. damaged: see dirStoreID.
func storeIDOf(dirs []string, damaged func(error)) (id storeID, from string, err error) {
	for _, d := range dirs {
		did, dfrom, err := dirStoreID(d, damaged)
		if err != nil {
			return id, from, err
		}
		switch {
		case did == (storeID{}):
		case id == (storeID{}):
			id, from = did, dfrom
		case did != id:
			return id, from, fmt.Errorf("storage: %w data directory: %s says store %v, but %s store %v: directories of two stores listed together (swapped?); list each store's own directories", ErrForeign, dfrom, did, from, id)
		}
	}
	return id, from, nil
}

// StoreIDOf returns the one store the data directories dirs belong to,
// as Open and OpenReader find it (zero when none says), and the file
// saying so. Directories of two stores are an error wrapping ErrForeign
// naming both files. A damaged STORE file is passed over: the segments
// say.
func StoreIDOf(dirs []string) (id [16]byte, from string, err error) {
	sid, from, err := storeIDOf(dirs, func(error) {})
	return sid, from, err
}

func newStoreID() storeID {
	var id storeID
	rand.Read(id[:]) // never fails (crypto/rand panics rather)
	return id
}
