package urltree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// File names inside a tree's directory.
const (
	metaName  = "urltree.meta"
	nodesName = "urltree.nodes"
	ptrsName  = "urltree.ptrs"
	arenaName = "urltree.arena"
)

// DefaultMaxURLLen is the longest URL Add accepts unless Options say
// otherwise; MaxURLLenLimit is the most Options may allow.
const (
	DefaultMaxURLLen = 8 << 10
	MaxURLLenLimit   = 1<<16 - 1
)

// Options configure Open. The zero value is usable.
type Options struct {
	// MaxURLLen is the longest URL Add accepts (DefaultMaxURLLen if 0, at
	// most MaxURLLenLimit).
	MaxURLLen int
	// ReadOnly opens an existing tree without writing to it. After a crash
	// the node array is then rebuilt in memory rather than in its file.
	ReadOnly bool
	// id, if not zero, is the ID a new tree gets (Check's repair keeps
	// the tree's); otherwise a new tree draws one.
	id ID
}

// Tree is a prefix-compressed URL set assigning dense ids. One writer and
// any number of readers may use it concurrently: Add takes a write lock,
// Find, Get and Len a read lock, Sync a read lock while it takes its commit
// (not while it writes the files back).
type Tree struct {
	mu     sync.RWMutex
	syncMu sync.Mutex // one Sync or Close at a time; taken before mu
	synced struct {   // the commit the last Sync wrote (under syncMu)
		c  commit
		ok bool
	}
	dir       string
	id        ID
	maxURLLen int
	readOnly  bool
	closed    bool
	recovered bool
	// rebuildWhy says why Open rebuilt the node file ("" if it did not).
	rebuildWhy string

	meta  *metaFile
	nodeF *mappedFile // nil when the node array lives on the heap
	ptrF  *mappedFile
	arenF *mappedFile

	nodes nodes
	ptrs  []byte // block pointers (entry.go), after the file header
	huff  *huffCode
	arena []byte // the whole arena file; entries start at headerSize

	count    uint64 // URLs stored
	arenaEnd uint64 // end offset of the last entry (or trailer) in the arena file
	root     uint32
	lost     uint64 // ids whose URL a repair could not recover (entry.go)

	scratch []byte    // entry encoding buffer of the writer
	ubuf    [5][]byte // URL buffers of the writer
}

// Open opens the tree in dir, creating dir and an empty tree when there is
// none (unless opts.ReadOnly). After a crash the durable prefix (the URLs
// added before the last Sync) is kept and the node array rebuilt.
func Open(dir string, opts *Options) (*Tree, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxURLLen == 0 {
		o.MaxURLLen = DefaultMaxURLLen
	}
	if o.MaxURLLen < 1 || o.MaxURLLen > MaxURLLenLimit {
		return nil, fmt.Errorf("urltree: MaxURLLen %d outside 1..%d", o.MaxURLLen, MaxURLLenLimit)
	}
	t := &Tree{dir: dir, id: o.id, maxURLLen: o.MaxURLLen, readOnly: o.ReadOnly, root: none, huff: huffTables()}
	metaPath := filepath.Join(dir, metaName)
	if _, err := os.Stat(metaPath); errors.Is(err, fs.ErrNotExist) {
		if o.ReadOnly {
			return nil, fmt.Errorf("%w: %s", ErrNoTree, dir)
		}
		if err := t.create(); err != nil {
			return nil, err
		}
		return t, nil
	}
	if err := t.open(); err != nil {
		t.closeFiles()
		return nil, err
	}
	return t, nil
}

func (t *Tree) path(name string) string { return filepath.Join(t.dir, name) }

// ID returns the tree's identity, recorded in each of its files (zero for
// a tree of format version 2 opened read-only: a writer gives it one).
func (t *Tree) ID() ID { return t.id }

func (t *Tree) create() error {
	if t.id.IsZero() {
		t.id = newID()
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return fmt.Errorf("urltree: %w", err)
	}
	// Array files without a meta file are left from a crash inside create,
	// and then hold nothing but their headers. Any more is a tree whose
	// meta file was lost: Check can rebuild it, a new tree must not
	// replace it.
	for _, name := range []string{nodesName, ptrsName, arenaName} {
		fi, err := os.Stat(t.path(name))
		if err == nil && !fi.Mode().IsRegular() {
			return corrupt(t.path(name), 0, "not a regular file but a %v: move it away", fi.Mode().Type())
		}
		if err == nil && (fi.Size() > minFileSize || !holdsNothing(t.path(name))) {
			return corrupt(t.path(metaName), 0, "missing, but %s holds data: repair with Check (kspider check --repair), or move the files away for a new tree", name)
		}
		if err := os.Remove(t.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("urltree: %w", err)
		}
	}
	var err error
	for _, f := range []struct {
		mf    **mappedFile
		name  string
		magic [8]byte
	}{{&t.nodeF, nodesName, magicNodes}, {&t.ptrF, ptrsName, magicPtrs}, {&t.arenF, arenaName, magicArena}} {
		if *f.mf, err = openMapped(t.path(f.name), false, true); err != nil {
			t.closeFiles()
			return err
		}
		if err = (*f.mf).ensure(minFileSize); err != nil {
			t.closeFiles()
			return err
		}
		putHeader((*f.mf).data, f.magic, t.id)
		if err = (*f.mf).sync(); err != nil {
			t.closeFiles()
			return err
		}
	}
	t.remapped()
	t.arenaEnd = headerSize
	t.meta, err = createMeta(t.path(metaName), commit{}, t.id)
	if err == nil {
		err = syncDir(t.dir)
	}
	if err != nil {
		t.closeFiles()
		os.Remove(t.path(metaName))
		return err
	}
	return nil
}

// holdsNothing reports whether the small file at path has nothing after
// its header but zeros.
func holdsNothing(path string) bool {
	f, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, minFileSize+1))
	return err == nil && (len(b) <= headerSize || allZero(b[headerSize:]))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("urltree: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("urltree: sync %s: %w", dir, err)
	}
	return nil
}

// remapped refreshes the typed views after a file was (re)mapped.
func (t *Tree) remapped() {
	if t.nodeF != nil {
		t.nodes = nodes(u32s(t.nodeF.data))
	}
	t.ptrs = nil
	if len(t.ptrF.data) > headerSize {
		t.ptrs = t.ptrF.data[headerSize:]
	}
	t.arena = t.arenF.data
}

// u32s views a mapped file after its header as native uint32s (mappings
// are page aligned, and kspider runs on little-endian CPUs).
func u32s(b []byte) []uint32 {
	if len(b) < headerSize+4 {
		return nil
	}
	b = b[headerSize:]
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// Len returns the number of URLs in the tree.
func (t *Tree) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return int(t.count)
}

// Recovered reports whether Open had to rebuild the node array (after a
// crash, or because the node file failed its checks).
func (t *Tree) Recovered() bool { return t.recovered }

// RecoveredWhy says why Open rebuilt the node array ("" if it did not):
// a crash, or damage to the node file.
func (t *Tree) RecoveredWhy() string { return t.rebuildWhy }

func (t *Tree) checkURL(url []byte) error {
	if len(url) == 0 {
		return ErrEmptyURL
	}
	if len(url) > t.maxURLLen {
		return fmt.Errorf("%w: %d bytes, the maximum is %d (URL starts %q)", ErrURLTooLong, len(url), t.maxURLLen, url[:min(64, len(url))])
	}
	return nil
}

// Add stores url unless it is there already, and returns its id. Ids are
// dense, in order of first addition, and never reused. The URL is durable
// once Sync returns.
func (t *Tree) Add(url []byte) (id uint32, added bool, err error) {
	if err := t.checkURL(url); err != nil {
		return 0, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, false, ErrClosed
	}
	var p insertPath
	d := t.search(url, &p)
	if d.found != none {
		return d.found, false, nil
	}
	if t.readOnly {
		return 0, false, ErrReadOnly
	}
	if t.count >= maxURLs {
		return 0, false, ErrFull
	}
	id = uint32(t.count)
	lcp, ref := d.loL, d.lo
	if d.hiL > lcp {
		lcp, ref = d.hiL, d.hi
	}
	lcp, ref = t.chooseRef(url, lcp, ref)
	t.scratch = t.appendEntry(t.scratch[:0], id, lcp, ref, url[lcp:])
	if err := t.appendScratch(id); err != nil {
		return 0, false, err
	}
	t.insert(url, &p, d, id)
	t.count++
	return id, true, nil
}

// appendScratch appends the encoded entry in t.scratch as entry id, with
// its block pointer if it starts a block and the block's checksum trailer
// if it ends one (entry.go).
func (t *Tree) appendScratch(id uint32) error {
	if err := t.reserve(id, uint64(len(t.scratch))+blockTrailer); err != nil {
		return err
	}
	if id%ptrBlock == 0 {
		binary.LittleEndian.PutUint64(t.ptrs[uint64(id>>ptrShift)*ptrRecord:], t.arenaEnd)
	}
	copy(t.arena[t.arenaEnd:], t.scratch)
	t.arenaEnd += uint64(len(t.scratch))
	if id%ptrBlock == ptrBlock-1 {
		// One checksum over the whole block: 16 small ones cost more.
		binary.LittleEndian.PutUint32(t.arena[t.arenaEnd:], t.lastBlockCRC(uint64(id)))
		t.arenaEnd += blockTrailer
	}
	return nil
}

// lastBlockCRC is the checksum of the entries of the block of id, up to
// the end of the arena (which must be the end of that block's entries).
func (t *Tree) lastBlockCRC(id uint64) uint32 {
	k := id >> ptrShift
	start := binary.LittleEndian.Uint64(t.ptrs[k*ptrRecord:])
	return crc32.Update(blockSeed(k), castagnoli, t.arena[start:t.arenaEnd])
}

// AddString is Add for a string.
func (t *Tree) AddString(url string) (uint32, bool, error) {
	return t.Add(unsafe.Slice(unsafe.StringData(url), len(url)))
}

// reserve grows the files so entry id of n bytes fits.
func (t *Tree) reserve(id uint32, n uint64) error {
	grown := false
	need := []struct {
		f    *mappedFile
		size uint64
	}{
		// 8 spare bytes let the tail decoder load whole words.
		{t.arenF, t.arenaEnd + n + 8},
		{t.ptrF, headerSize + (uint64(id>>ptrShift)+1)*ptrRecord},
		{t.nodeF, headerSize + (uint64(id)+1)*nodeSize},
	}
	for _, r := range need {
		if r.f == nil {
			continue
		}
		if r.size > uint64(len(r.f.data)) {
			if err := r.f.ensure(int64(r.size)); err != nil {
				if r.f.data == nil {
					// The file could not even be mapped back: nothing
					// may touch the arrays again.
					t.closed = true
					t.closeFiles()
					return fmt.Errorf("%w (tree closed: %s could not be remapped)", err, r.f.path)
				}
				t.remapped()
				return err
			}
			grown = true
		}
	}
	if grown {
		t.remapped()
	}
	return nil
}

// Find returns the id of url and whether it is in the tree.
func (t *Tree) Find(url []byte) (uint32, bool) {
	if len(url) == 0 || len(url) > t.maxURLLen {
		return 0, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return 0, false
	}
	var p insertPath
	d := t.search(url, &p)
	return d.found, d.found != none
}

// FindString is Find for a string.
func (t *Tree) FindString(url string) (uint32, bool) {
	return t.Find(unsafe.Slice(unsafe.StringData(url), len(url)))
}

// Get appends the URL with the given id to buf and returns the result.
func (t *Tree) Get(id uint32, buf []byte) ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return buf, ErrClosed
	}
	if uint64(id) >= t.count {
		return buf, fmt.Errorf("%w: id %d, the tree holds %d URLs", ErrNotFound, id, t.count)
	}
	n := len(buf)
	if buf = t.appendURL(buf, id); len(buf) == n {
		return buf, fmt.Errorf("%w: id %d", ErrLost, id)
	}
	return buf, nil
}

// Lost returns the number of ids whose URL a repair could not recover
// (Check): Get returns ErrLost for them, and Find, Sorted and ByID do not
// know them.
func (t *Tree) Lost() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return int(t.lost)
}

// Sync makes every URL added so far durable.
//
// The fdatasyncs run under a read lock only on the commit, not on the
// files (they took 50 ms on average, up to 400, on a busy disk, and Add
// and Get waited on them): the commit is taken first and covers only the
// entries written before it; entries added meanwhile lie past it, where
// Open trusts nothing, and bytes below it do not change (the arena is
// append-only; a block's trailer is written once the block is full, past
// the commit's end). syncMu keeps one Sync (or Close) at a time on the
// meta file.
func (t *Tree) Sync() error {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return ErrClosed
	}
	if t.readOnly {
		t.mu.RUnlock()
		return nil
	}
	c := t.commitRecord(0)
	arenF, ptrF, meta := t.arenF, t.ptrF, t.meta
	t.mu.RUnlock()
	if t.synced.ok && c == t.synced.c {
		// Nothing added since the last Sync: its commit stands. (A node
		// syncs on a timer and at its end, often with nothing new, and
		// each Sync is four fdatasyncs.)
		return nil
	}
	if err := arenF.sync(); err != nil {
		return err
	}
	// Block pointers are written once, when a block starts: with no new
	// block since the last Sync the file holds nothing new.
	if !t.synced.ok || blocks(c.count) != blocks(t.synced.c.count) {
		if err := ptrF.sync(); err != nil {
			return err
		}
	}
	if err := meta.write(c); err != nil {
		return err
	}
	t.synced.c, t.synced.ok = c, true
	return nil
}

// blocks is the number of entry blocks (and block pointers) of count URLs.
func blocks(count uint64) uint64 { return (count + ptrBlock - 1) / ptrBlock }

func (t *Tree) commit(flags uint32) error {
	if t.readOnly {
		return nil
	}
	if err := t.arenF.sync(); err != nil {
		return err
	}
	if err := t.ptrF.sync(); err != nil {
		return err
	}
	c := t.commitRecord(flags)
	if flags&flagClean != 0 {
		c.nodesCRC = t.nodesCRC()
		if err := t.nodeF.sync(); err != nil {
			return err
		}
	}
	return t.meta.write(c)
}

// commitRecord is the commit of the tree as it is now.
func (t *Tree) commitRecord(flags uint32) commit {
	c := commit{count: t.count, arenaLen: t.arenaEnd - headerSize, root: t.root, flags: flags}
	if t.count%ptrBlock != 0 {
		c.tailCRC = t.lastBlockCRC(t.count - 1)
	}
	return c
}

// nodesCRC is the checksum of the node array's used part, which a clean
// commit records: Open trusts the node file only if it matches.
func (t *Tree) nodesCRC() uint32 {
	n := t.count * nodeSize
	if n == 0 {
		return 0
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&t.nodes[0])), n)
	return crc32.Checksum(b, castagnoli)
}

// Close syncs the tree, marks its node array clean (so the next Open need
// not rebuild it) and releases the files.
func (t *Tree) Close() error {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	err := t.commit(flagClean)
	t.closed = true
	if cerr := t.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

func (t *Tree) closeFiles() error {
	var err error
	for _, f := range []*mappedFile{t.nodeF, t.ptrF, t.arenF} {
		if f != nil {
			if cerr := f.close(); err == nil {
				err = cerr
			}
		}
	}
	t.nodeF, t.ptrF, t.arenF = nil, nil, nil
	t.nodes, t.ptrs, t.arena = nil, nil, nil
	if t.meta != nil {
		if cerr := t.meta.close(); err == nil {
			err = cerr
		}
		t.meta = nil
	}
	return err
}
