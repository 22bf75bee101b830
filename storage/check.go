package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DamagedDir is the folder of a data directory that Check's repair moves
// damaged files into; nothing is ever deleted.
const DamagedDir = "damaged"

// Check verifies the page store in dir the way bbolt check does: every
// segment header and record against its checksum, the index against the
// segments, and every index entry. It prints each problem to w (one line,
// naming the file and offset) and returns how many it found. A directory
// without a store is an error wrapping ErrNoStore and fs.ErrNotExist.
//
// With repair, it then takes the directory's lock (no writer may run) and
// rewrites what can be rebuilt: a segment with damage is rewritten with its
// intact records only (decodable ones), the original moved into
// dir/damaged/; a segment
// missing from the numbering gets an empty stand-in; the index is rebuilt
// from the segments (a damaged one moved into damaged/ first). An index of
// an older format version is rebuilt too, which is not a problem.
func Check(dir string, repair bool, w io.Writer) (problems int, err error) {
	return CheckFor(dir, repair, w, [16]byte{}, "")
}

// CheckFor is Check holding the store to the URL tree whose ID is tree,
// read from treeFile (what Config.TreeID is to Open; zero: none). A
// store of another tree, which Open refuses with ErrForeign, is a
// problem naming both, and a repair leaves it as it is: no repair makes
// one data directory's pages another's.
func CheckFor(dir string, repair bool, w io.Writer, tree [16]byte, treeFile string) (problems int, err error) {
	if tree != [16]byte{} {
		id, from, err := dirStoreID(dir, func(error) {})
		if err != nil {
			return 0, err
		}
		if id != (storeID{}) && id != storeID(tree) {
			fmt.Fprintf(w, "pages: damage: %s names store %v, but %s is URL tree %v: %v page store, of another data directory (swapped?)\n", from, id, treeFile, storeID(tree), ErrForeign)
			fmt.Fprintf(w, "pages: %s: not checked further and not repaired: put back the node's own store\n", dir)
			return 1, nil
		}
	}
	st, err := checkOnce(dir, w)
	if err != nil {
		return 0, err
	}
	problems = int(st.Damage)
	if problems == 0 && len(st.Notes) == 0 {
		fmt.Fprintf(w, "pages: %s: ok: %d pages (%d superseded records)\n", dir, st.Records, st.Superseded)
		return 0, nil
	}
	if problems > 0 {
		fmt.Fprintf(w, "pages: %s: %d problems: %d damaged regions (%d bytes), %d pages known lost; %d intact pages\n",
			dir, problems, st.Skipped, st.SkippedBytes, st.Lost, st.Records)
	}
	if !repair {
		switch {
		case problems > 0 && crashLeftovers(st):
			fmt.Fprintf(w, "pages: %s: all of it is what a write cut short by a crash leaves: the next writer mends it (or kspider check --repair now)\n", dir)
		case problems > 0:
			fmt.Fprintf(w, "pages: %s: run kspider check --repair to rebuild what can be rebuilt\n", dir)
		}
		return problems, nil
	}
	if err := repairStore(dir, problems > 0, w); err != nil {
		return problems, err
	}
	after, err := checkOnce(dir, io.Discard)
	if err != nil {
		return problems, err
	}
	if after.Damage > 0 {
		return problems, fmt.Errorf("storage: %s: %d problems remain after the repair: %v", dir, after.Damage, after.Errors)
	}
	fmt.Fprintf(w, "pages: %s: repaired: %d intact pages readable\n", dir, after.Records)
	return problems, nil
}

// crashLeftovers reports whether all the damage st found is what a writer
// killed mid-write leaves, which the next writer mends: a torn record at
// the end of the last segment, one index entry or one header slot torn
// after the checkpoint. A stray write there looks the same, so it is still
// damage; the check only says that no repair is needed.
func crashLeftovers(st ScanStats) bool {
	if st.Lost > 0 || st.Damage != int64(len(st.Errors)) {
		return false
	}
	for _, e := range st.Errors {
		var (
			c  *Corruption
			te *TornEntries
			th *TornHeader
		)
		if !(errors.As(e, &c) && c.TornTail || errors.As(e, &te) && te.N == 1 || errors.As(e, &th)) {
			return false
		}
	}
	return true
}

// checkOnce scans dir and prints what it met.
func checkOnce(dir string, w io.Writer) (ScanStats, error) {
	r, err := OpenReader([]string{dir})
	if err != nil {
		if errors.Is(err, ErrNoStore) {
			err = fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
		}
		return ScanStats{}, err
	}
	defer r.Close()
	if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
		return ScanStats{}, err
	}
	st := r.Stats()
	for _, n := range st.Notes {
		fmt.Fprintf(w, "pages: note: %s\n", n)
	}
	for _, e := range st.Errors {
		fmt.Fprintf(w, "pages: damage: %v\n", e)
	}
	if more := st.Damage - int64(len(st.Errors)); more > 0 {
		fmt.Fprintf(w, "pages: %d more problems not shown\n", more)
	}
	return st, nil
}

// maxStandIns bounds the empty segments a repair writes into one gap of
// the numbering: a larger gap is a stray file far beyond the store's
// segments (99999999.seg), not lost ones, and filling it would write
// millions of files.
const maxStandIns = 1024

// checkStrayGap returns an error naming the segment after the first gap in
// dir's numbering nums (ascending) longer than maxStandIns: a stray file,
// which neither a repair nor a writer may take for the store's. It names
// what stands under names in the gap as a Reader does (gapAbsent): a FIFO
// or a directory there was left out, though moving it may be the remedy.
func checkStrayGap(dir string, nums []uint32) error {
	var prev uint32
	for _, n := range nums {
		if n-prev-1 > maxStandIns {
			return fmt.Errorf("storage: %s: %s (%d of them); if %s is not this store's, move it out of the directory",
				dir, gapAbsent(dir, prev+1, n-1), n-prev-1, segmentPath(dir, n))
		}
		prev = n
	}
	return nil
}

// repairStore rewrites damaged segments, fills gaps in the numbering and
// rebuilds the index, under the directory's lock.
func repairStore(dir string, damaged bool, w io.Writer) error {
	lockPath := filepath.Join(dir, "LOCK")
	lock, err := openLock(lockPath)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("storage: data directory %s is in use by a running store; stop it before repairing (%s: %w)", dir, lockPath, err)
	}
	nums, err := listSegments(dir)
	if err != nil {
		return err
	}
	if err := checkStrayGap(dir, nums); err != nil {
		return err
	}
	id, err := repairStoreFile(dir, w)
	if err != nil {
		return err
	}
	// The index, if it opens, tells records of the store from records in
	// a page's body that the search after damage finds (indexVouch).
	vouch := func(uint32) func(uint64, int64) bool { return nil }
	if ix, err := openIndex(filepath.Join(dir, indexName), false); err == nil {
		defer ix.close()
		vouch = func(n uint32) func(uint64, int64) bool { return indexVouch(ix, n, nil) }
	}
	for i, n := range nums {
		from := uint32(1)
		if i > 0 {
			from = nums[i-1] + 1
		}
		for m := from; m < n; m++ {
			if err := writeSegmentAtomic(dir, m, id, func(io.Writer) error { return nil }); err != nil {
				return err
			}
			fmt.Fprintf(w, "pages: %s: missing; replaced by an empty segment (its pages are lost)\n", segmentPath(dir, m))
		}
		if err := repairSegment(dir, n, id, vouch(n), w); err != nil {
			return err
		}
	}
	ixPath := filepath.Join(dir, indexName)
	if damaged {
		if _, err := os.Stat(ixPath); err == nil {
			if err := quarantine(dir, indexName); err != nil {
				return err
			}
			fmt.Fprintf(w, "pages: %s: moved into %s\n", ixPath, DamagedDir)
		}
	}
	pages, err := rebuildIndex(dir, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pages: %s: rebuilt from the segments (%d pages)\n", ixPath, pages)
	return syncDir(dir)
}

// repairStoreFile sets a damaged STORE file aside (into damaged/) and
// writes the directory's store ID, as its segments name it, where there is
// no STORE file. It returns that ID (zero: none known, a store from before
// identities; the next writer gives it one).
func repairStoreFile(dir string, w io.Writer) (storeID, error) {
	_, err := readStoreFile(dir)
	if errors.Is(err, ErrCorrupt) {
		if err := quarantine(dir, storeFileName); err != nil {
			return storeID{}, err
		}
		fmt.Fprintf(w, "pages: %v; moved into %s\n", err, DamagedDir)
	} else if err != nil {
		return storeID{}, err
	}
	id, from, err := dirStoreID(dir, nil)
	if err != nil || id == (storeID{}) || from == filepath.Join(dir, storeFileName) {
		return id, err
	}
	if err := writeStoreFile(dir, id); err != nil {
		return id, err
	}
	fmt.Fprintf(w, "pages: %s: written anew, naming store %v as %s does\n", filepath.Join(dir, storeFileName), id, from)
	return id, nil
}

// repairSegment rewrites segment n when it has any damage: a new file with
// a good header and the intact records, the original moved into damaged/.
// A record whose body cannot be decoded, though its CRC holds, is damaged
// too: kept, it would be the same damage after the repair.
func repairSegment(dir string, n uint32, id storeID, vouch func(uint64, int64) bool, w io.Writer) error {
	path := segmentPath(dir, n)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	sr, hdr, err := newSegmentReader(f, path, n, fi.Size(), true, id)
	var c *Corruption
	switch {
	case errors.As(err, &c):
		// Torn or cut inside its header, or another store's: nothing in
		// it can be read.
		if err := quarantine(dir, segmentName(n)); err != nil {
			return err
		}
		if err := writeSegmentAtomic(dir, n, id, func(io.Writer) error { return nil }); err != nil {
			return err
		}
		fmt.Fprintf(w, "pages: %s: %v; moved into %s, replaced by an empty segment\n", path, c.Reason, DamagedDir)
		return nil
	case err != nil:
		return err
	}
	sr.vouch = vouch
	dec := new(decoder)
	defer dec.close()
	var body []byte
	intact := func(h recordHeader, rec []byte) bool {
		b, err := dec.decode(h.codec, body[:0], recordBody(h, rec), int(h.rawLen))
		if err != nil {
			return false
		}
		body = b // reused, grown to the largest body
		return true
	}
	damaged := hdr != nil
	for !damaged {
		_, h, rec, err := sr.next()
		if err == io.EOF {
			break
		}
		if errors.As(err, &c) || err == nil && !intact(h, rec) {
			damaged = true
		} else if err != nil {
			return err
		}
	}
	if !damaged {
		return nil
	}
	records, kept := 0, int64(0)
	err = writeSegmentAtomic(dir, n, id, func(out io.Writer) error {
		sr.off = sr.first
		for {
			_, h, rec, err := sr.next()
			if err == io.EOF {
				return nil
			}
			if errors.As(err, &c) || err == nil && !intact(h, rec) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := out.Write(rec); err != nil {
				return err
			}
			records++
			kept += int64(len(rec))
		}
	}, func() error { return quarantine(dir, segmentName(n)) })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "pages: %s: rewritten with its %d intact records (%d of %d bytes); the original moved into %s\n",
		path, records, kept+segmentHeaderSize, fi.Size(), DamagedDir)
	return nil
}

// writeSegmentAtomic writes segment n of dir - a header, then what fill
// writes - under a temporary name, syncs it and renames it into place,
// after calling each of before (such as moving the old file away).
func writeSegmentAtomic(dir string, n uint32, id storeID, fill func(io.Writer) error, before ...func() error) error {
	path := segmentPath(dir, n)
	tmp := path + ".repair"
	f, err := createTemp(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = bw.Write(encodeSegmentHeader(n, id))
	if err == nil {
		err = fill(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	for _, b := range before {
		if err == nil {
			err = b()
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp) // our own temporary copy, never the data
		return fmt.Errorf("storage: rewriting %s: %w", path, err)
	}
	return syncDir(dir)
}

// quarantine moves dir/name into dir/damaged/, under a new name if one is
// there already.
func quarantine(dir, name string) error {
	qdir := filepath.Join(dir, DamagedDir)
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	dst := filepath.Join(qdir, name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = filepath.Join(qdir, name+"."+strconv.Itoa(i))
	}
	if err := os.Rename(filepath.Join(dir, name), dst); err != nil {
		return fmt.Errorf("storage: moving %s into %s: %w", name, qdir, err)
	}
	if err := syncDir(qdir); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// rebuildIndex writes a fresh index of every record in dir's segments (the
// later record of a URL id wins) with the checkpoint at their end.
func rebuildIndex(dir string, id storeID) (pages int, err error) {
	path := filepath.Join(dir, indexName)
	if err := createIndex(path); err != nil {
		return 0, err
	}
	ix, err := openIndex(path, true)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := ix.close(); err == nil && cerr != nil {
			err = fmt.Errorf("storage: closing index %s: %w", path, cerr)
		}
	}()
	nums, err := listSegments(dir)
	if err != nil {
		return 0, err
	}
	end := location{}
	for _, n := range nums {
		p := segmentPath(dir, n)
		f, err := os.Open(p)
		if err != nil {
			return 0, fmt.Errorf("storage: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("storage: %w", err)
		}
		sr, _, err := newSegmentReader(f, p, n, fi.Size(), true, id)
		if err != nil {
			f.Close()
			return 0, err
		}
		for {
			off, h, _, err := sr.next()
			if err == io.EOF {
				break
			}
			if errors.Is(err, ErrCorrupt) {
				continue
			}
			if err != nil {
				f.Close()
				return 0, err
			}
			if err := ix.set(h.urlID, n, off); err != nil {
				f.Close()
				return 0, fmt.Errorf("storage: %s at offset %d: %w", p, off, err)
			}
			pages++
		}
		f.Close()
		end = location{n, fi.Size()}
	}
	if end.seg == 0 {
		end = location{0, 0}
	}
	if err := ix.setCheckpoint(end.seg, end.off); err != nil {
		return 0, err
	}
	return pages, nil
}
