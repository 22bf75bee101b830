package scheduler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// onlyIn reports whether every damage finding is in file.
func onlyIn(fs []Finding, file string) bool {
	for _, f := range fs {
		if f.Damage && f.File != file {
			return false
		}
	}
	return true
}

// salvageStates repairs a states file whose damage is confined to its
// committed records: it copies the file to keep (for the operator), then
// rewrites in place every one of the durable records that is zero (version
// 2), fails its check or names a host beyond the nHosts that verify (or,
// before version 4, one of 2^28 or more, which Open refuses), as a gap
// record — the URL counts as never added, and the node adds it again when
// it meets it — and extends a file cut short to the durable count the same
// way. Past the commit a record failing its check or naming such a host
// becomes zero (an id not written); the rest there is left for Open. It
// returns how many records it replaced.
func salvageStates(path, keep string, version uint32, durable uint64, nHosts uint32) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("scheduler: repair: %w", err)
	}
	defer f.Close()
	if err := copyFile(f, keep); err != nil {
		return 0, fmt.Errorf("scheduler: repair: keeping %s in %s: %w", path, keep, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("scheduler: repair: %w", err)
	}
	// Past the commit, up to where the data ends: beyond it lie only
	// holes (a file extended with zeros), ids never written.
	end := dataEnd(f, 0, fi.Size())
	total := max(durable, uint64(max(0, end-headerSize)+recordSize-1)/recordSize)
	const chunk = 1 << 16 // records per read
	buf := make([]byte, chunk*recordSize)
	fixed := 0
	for first := uint64(0); first < total; first += chunk {
		n := min(chunk, total-first)
		b := buf[:n*recordSize]
		off := headerSize + int64(first)*recordSize
		k, err := f.ReadAt(b, off)
		if err != nil && err != io.EOF {
			return fixed, fmt.Errorf("scheduler: repair: reading %s at offset %d: %w", path, off, err)
		}
		changed := false
		for i := uint64(0); i < n; i++ {
			id := uint32(first + i)
			e := b[i*recordSize:]
			r := record(binary.LittleEndian.Uint64(e))
			committed := first+i < durable
			bad := int(i*recordSize) >= k-k%recordSize // cut off
			bad = bad || r == 0 && version >= 2 && committed || checkRecord(id, r) != nil ||
				r.added() && r.hostBeyond(version) || committed && r.added() && r.host() >= nHosts
			if bad {
				g := gapRecord(id)
				if !committed {
					g = 0 // never written, as far as Open knows
				}
				binary.LittleEndian.PutUint64(e, uint64(g))
				fixed++
				changed = true
			}
		}
		if changed {
			if _, err := f.WriteAt(b, off); err != nil {
				return fixed, fmt.Errorf("scheduler: repair: writing %s at offset %d: %w", path, off, err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fixed, fmt.Errorf("scheduler: repair: sync %s: %w", path, err)
	}
	return fixed, nil
}

// copyFile copies all of f to a new file at dst, synced: its data, and
// the holes after it as a hole of the same size (a states file extended
// with zeros to a sparse terabyte was copied a terabyte of zeros long,
// until the disk was full). A copy that fails is removed: left in
// damaged/ under the file's name, part of it passed for the damaged file
// kept, and it held what room a full disk had left.
func copyFile(f *os.File, dst string) (err error) {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(dst)
		}
	}()
	_, err = io.Copy(out, io.NewSectionReader(f, 0, dataEnd(f, 0, fi.Size())))
	if err == nil {
		err = out.Truncate(fi.Size())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	return err
}

// rewriteMeta repairs a meta file whose only damage is in its commit slots
// while one holds a valid commit c, which Open uses: a slot failing its
// checksum (a bad sector, a torn write), zeroed or misdirected. Such damage
// moved all four files away before, and the next Open started an empty
// scheduler, losing every URL's state for a slot Open did not even need.
// It copies the file to keep, then writes a new one beside it, c in the
// slot of its number and c again as the next commit in the other, and
// renames it into place.
func rewriteMeta(path, keep string, c commit, id [16]byte) error {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Lost (CheckReport.CommitLost): nothing to keep.
	case err != nil:
		return fmt.Errorf("scheduler: repair: %w", err)
	default:
		err = copyFile(f, keep)
		f.Close()
		if err != nil {
			return fmt.Errorf("scheduler: repair: keeping %s in %s: %w", path, keep, err)
		}
	}
	b := make([]byte, metaFileSize)
	putHeader(b, magicMeta, id)
	next := c
	next.seq++
	for _, x := range []commit{c, next} {
		copy(b[metaSlotOffsets[x.seq%2]:], x.encode())
	}
	// Removed and made anew, never opened as it is: one a repair cut short
	// left, or a symbolic link put there (to a system file, for a check
	// run as root), had its target truncated and overwritten.
	tmp := path + ".repair"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("scheduler: repair: %w", err)
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("scheduler: repair: %w", err)
	}
	_, err = out.Write(b)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("scheduler: repair: rewriting %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// onlyHeaders reports whether every damage finding is that of a header a
// repair rebuilt (Check).
func onlyHeaders(fs []Finding, headerFinding map[string]int, rebuilt map[string][]byte) bool {
	for i, f := range fs {
		if f.Damage && (rebuilt[f.File] == nil || headerFinding[f.File] != i) {
			return false
		}
	}
	return len(rebuilt) > 0
}

// rewriteHeader writes the rebuilt header h over the damaged one of the
// file at path, after copying the file to keep (unless keep is "": the
// caller kept it).
func rewriteHeader(path, keep string, h []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scheduler: repair: %w", err)
	}
	defer f.Close()
	if keep != "" {
		if err := copyFile(f, keep); err != nil {
			return fmt.Errorf("scheduler: repair: keeping %s in %s: %w", path, keep, err)
		}
	}
	if _, err := f.WriteAt(h, 0); err != nil {
		return fmt.Errorf("scheduler: repair: writing the header of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("scheduler: repair: sync %s: %w", path, err)
	}
	return nil
}
