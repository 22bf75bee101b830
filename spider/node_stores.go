package spider

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/kspider/kspider/storage"
)

// The page store spreads a crawl's pages over its directories (each saver
// takes the next record when it is free), and the scheduler only knows a
// URL as done, not where its page went. So with one of several
// storage.dirs unmounted (an empty mount point) or emptied between runs,
// the pages it held were done all the same, never fetched again, and the
// run finished with exit 0 (checkStoreGone sees only every directory
// empty). DIR/STORES keeps the directories that have held pages of the
// crawl, and a start where one of them holds none, or is no longer in
// storage.dirs, is refused, naming it. A directory is recorded before the
// scheduler commits a URL done whose page it may hold: the writer looks
// at the directories not recorded yet before each sync (a directory the
// store never wrote into is looked at each time: a readdir).
//
// On disk, DIR/STORES (version 1) is lines of text:
//
//	kspider page stores 1
//	"pages"
//	"/disk2/pages"
//	crc32c 1a2b3c4d
//
// one line per directory, quoted as Go quotes strings, in the order
// recorded: its path in the data directory when it is inside (the
// default "pages"), so that the data directory can be moved whole, else
// its absolute path; the CRC-32C (Castagnoli) covers every line before
// its own. It is written to a temporary name, fsynced and renamed
// (writeDirFile). A data directory without it (new, or crawled before it)
// records the directories that hold pages at the start; a new URL tree
// records the file anew, but one naming directories beside no URL tree is
// refused (checkNewTreeStore): its crawl's tree is missing, not gone.

// StoresFile is the name of the file of a data directory that names the
// page store directories that have held its pages.
const StoresFile = "STORES"

// maxStoresSize bounds what readStores reads of the file.
const maxStoresSize = 1 << 20

const storesHeader = "kspider page stores 1\n"

func encodeStores(dirs []string) []byte {
	b := []byte(storesHeader)
	for _, d := range dirs {
		b = append(strconv.AppendQuote(b, d), '\n')
	}
	return append(b, dirFileSum(b)...)
}

// readStores reads dir's STORES; the error matches fs.ErrNotExist when
// there is none, and names the file and what is wrong when it is damaged.
func readStores(dir string) ([]string, error) {
	path := filepath.Join(dir, StoresFile)
	damaged := func(what string) error {
		return fmt.Errorf("spider: %s is damaged (%s): check that every directory of the crawl's page store is in storage.dirs and holds its pages, then delete the file: the next run records the directories that hold pages then", path, what)
	}
	b, err := readDirFile(dir, StoresFile, maxStoresSize)
	if errors.Is(err, errNotRegular) {
		return nil, damaged(err.Error())
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxStoresSize {
		return nil, damaged(fmt.Sprintf("over %d bytes", maxStoresSize))
	}
	if err := dirFileNewer(path, b, "kspider page stores ", 1); err != nil {
		return nil, fmt.Errorf("spider: %w", err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) < 3 || len(lines[len(lines)-1]) != 0 || string(lines[0]) != storesHeader {
		return nil, damaged(fmt.Sprintf("%d bytes, not a header, names and a checksum", len(b)))
	}
	var dirs []string
	for i, l := range lines[1 : len(lines)-2] {
		d, err := strconv.Unquote(string(bytes.TrimSuffix(l, []byte("\n"))))
		if err != nil {
			return nil, damaged(fmt.Sprintf("line %d is not a quoted path", i+2))
		}
		dirs = append(dirs, d)
	}
	if !bytes.Equal(encodeStores(dirs), b) {
		return nil, damaged(fmt.Sprintf("line %d, the checksum, does not match the lines before it", len(lines)-1))
	}
	return dirs, nil
}

// ReadStoreDirs returns the page store directories that dir's STORES
// names as having held pages of its crawl (those inside dir joined to it);
// the error matches fs.ErrNotExist when there is no such file, and names
// the file when it is damaged.
func ReadStoreDirs(dir string) ([]string, error) {
	names, err := readStores(dir)
	if err != nil {
		return nil, err
	}
	s := &storeDirs{dir: dir}
	for i, n := range names {
		names[i] = s.path(n)
	}
	return names, nil
}

// storeDirs is the node's view of DIR/STORES.
type storeDirs struct {
	dir      string   // the data directory
	names    []string // storage.dirs, as recorded (storeName)
	mu       sync.Mutex
	recorded []string // as in the file
	missing  int      // how many of names are not recorded yet

	// stale: the file is of a crawl whose tree is gone (record writes it
	// anew).
	stale bool
	// running: the crawl runs; a directory that cannot be read is
	// counted missing and said once (said) through logf, not an error.
	running bool
	logf    func(string, ...any)
	said    map[string]bool
}

// storeName is how STORES names page store directory d of data directory
// dir: by its path in dir when it is inside (the default DIR/pages), so
// that the data directory moved whole (cp -a to another disk) is the same
// crawl; else by its absolute path.
func storeName(dir, d string) (string, error) {
	a, err := filepath.Abs(d)
	if err != nil {
		return "", fmt.Errorf("spider: page store directory %s: %w", d, err)
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("spider: data directory %s: %w", dir, err)
	}
	if rel, err := filepath.Rel(ad, a); err == nil && filepath.IsLocal(rel) {
		return rel, nil
	}
	return a, nil
}

// path is the directory STORES names name.
func (s *storeDirs) path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(s.dir, name)
}

// openStores checks storage.dirs (dirs) against DIR/STORES before the
// store is opened; record, once it is, records those that hold pages; a
// new URL tree (fresh) starts the record anew. logf says what the node's syncs could
// not look at.
func openStores(dir string, dirs []string, fresh bool, logf func(string, ...any)) (*storeDirs, error) {
	s := &storeDirs{dir: dir, logf: logf, said: map[string]bool{}}
	for _, d := range dirs {
		name, err := storeName(dir, d)
		if err != nil {
			return nil, err
		}
		s.names = append(s.names, name)
	}
	s.missing = len(s.names) // not looked at yet
	was, err := readStores(dir)
	stale := fresh && !errors.Is(err, fs.ErrNotExist) // left by a crawl whose tree is gone
	switch {
	case errors.Is(err, fs.ErrNotExist) || fresh:
		was = nil
	case err != nil:
		return nil, err
	}
	s.recorded = was
	file := filepath.Join(dir, StoresFile)
	for _, d := range was {
		if !slices.Contains(s.names, d) {
			return nil, fmt.Errorf("spider: page store directory %s holds pages of the crawl in %s (%s says so), but it is not in storage.dirs: its pages would be taken as stored and not fetched again; put it back in storage.dirs (if it moved, list it where it is now, and once every directory of the store is listed delete %s; if its pages are lost for good, delete %s)",
				s.path(d), dir, file, file, file)
		}
		held, err := storage.HoldsPages(s.path(d))
		if err != nil {
			return nil, fmt.Errorf("spider: %w", err)
		}
		if !held {
			return nil, fmt.Errorf("spider: page store directory %s held pages of the crawl in %s (%s says so), but holds none now: its disk is not mounted, or it was emptied; its pages would be taken as stored and not fetched again; mount or restore it (if its pages are lost for good, delete %s)",
				s.path(d), dir, file, file)
		}
	}
	s.stale = stale
	return s, nil
}

// record records the directories that hold pages, once the store has
// opened them (storeOpened): recorded before, a directory of another
// crawl's store listed by mistake was in STORES by the time the store
// refused it, and the start with the mistake undone was refused in turn,
// the directory "not in storage.dirs".
func (s *storeDirs) record() error {
	if err := s.note(s.stale); err != nil {
		return err
	}
	s.running = true
	return nil
}

// note records the directories of storage.dirs that hold pages and were
// not recorded yet; write: record the file even with none new (to replace
// a stale one). Called before each sync of the scheduler, so that a URL
// it commits done has its page in a recorded directory.
func (s *storeDirs) note(write bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !write && s.missing == 0 {
		return nil
	}
	grown := false
	s.missing = 0
	for _, d := range s.names {
		if slices.Contains(s.recorded, d) {
			continue
		}
		held, err := storage.HoldsPages(s.path(d))
		if err != nil && s.running {
			// A failed disk: its saver has stopped, the others store
			// its records; failing the sync would stop the crawl.
			if !s.said[d] {
				s.said[d] = true
				s.logf("spider: cannot tell whether page store directory %s holds pages, to record it in %s: %v", s.path(d), filepath.Join(s.dir, StoresFile), err)
			}
			held = false
		} else if err != nil {
			return fmt.Errorf("spider: %w", err)
		}
		if !held {
			s.missing++
			continue
		}
		s.recorded, grown = append(s.recorded, d), true
	}
	if !grown && !write {
		return nil
	}
	return writeDirFile(s.dir, StoresFile, encodeStores(s.recorded))
}
