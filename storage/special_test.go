package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// withinDeadline runs f and fails the test if it has not returned within a
// generous deadline: it catches hangs, it does not time anything.
func withinDeadline(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// A named pipe in place of url.idx or of a segment the index points at
// (an operator's mistake, or a hostile one) blocked the open forever: a
// reader opening it waits for a writer that never comes. Now it is damage:
// the reader reads the segments instead, and a writer rebuilds the index.
func TestNamedPipeInsteadOfAStoreFile(t *testing.T) {
	dir, spans := layoutStore(t, smallSegments(), 60)
	ix := filepath.Join(dir, indexName)
	if err := os.Remove(ix); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(ix, 0o644); err != nil {
		t.Skipf("cannot make a named pipe: %v", err)
	}
	withinDeadline(t, "OpenReader with a named pipe as url.idx", func() {
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Errorf("OpenReader: %v", err)
			return
		}
		defer r.Close()
		for id := uint64(0); id < 60; id++ {
			p, err := r.Get(id)
			if err != nil {
				t.Errorf("Get(%d): %v", id, err)
				return
			}
			samePage(t, p, testPage(id))
		}
		if st := r.Stats(); st.Damage == 0 || !strings.Contains(st.Errors[0].Error(), "not a regular file") {
			t.Errorf("a named pipe as the index not reported: %+v", st)
		}
	})
	withinDeadline(t, "a writer's Open with a named pipe as url.idx", func() {
		writeStore(t, Config{Dirs: []string{dir}}, 60, 70)
	})
	checkStore(t, []string{dir}, 0, 70)

	// The last segment, which the index names, replaced by a named pipe.
	var last uint32
	for _, sp := range spans {
		last = max(last, sp.seg)
	}
	seg := segmentPath(dir, last)
	if err := os.Rename(seg, seg+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(seg, 0o644); err != nil {
		t.Fatal(err)
	}
	withinDeadline(t, "Get of a page in a segment replaced by a named pipe", func() {
		r, err := OpenReader([]string{dir})
		if err != nil {
			t.Errorf("OpenReader: %v", err)
			return
		}
		defer r.Close()
		for id, sp := range spans {
			p, err := r.Get(id)
			switch {
			case sp.seg == last && (err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not a regular file")):
				t.Errorf("Get(%d) in the named pipe: %v, want damage naming it", id, err)
			case sp.seg != last && err != nil:
				t.Errorf("Get(%d): %v", id, err)
			case sp.seg != last:
				samePage(t, p, testPage(id))
			}
		}
		if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
			t.Errorf("Scan: %v", err)
		}
		if r.Stats().Lost == 0 {
			t.Errorf("the pages of the replaced segment not counted lost: %+v", r.Stats())
		}
	})
}

// A file that is not a segment under the next segment's name (copied
// there by mistake) failed its header check and held no record, so the
// writer's open took all of it but the first 16 bytes for a torn tail and
// cut it away. Only a segment with an intact header is appended to, so
// only such a one can end in a write cut short: the file is now left as it
// is, reported, and the writer goes on in a new segment.
func TestForeignFileUnderASegmentName(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 40)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	foreign := segmentPath(dir, nums[len(nums)-1]+1)
	junk := make([]byte, 100<<10)
	rng := rand.New(rand.NewPCG(36, 1))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(foreign, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 40, 50)
	if got, err := os.ReadFile(foreign); err != nil || !bytes.Equal(got, junk) {
		t.Fatalf("the writer's open changed %s: %d bytes left of %d, %v", foreign, len(got), len(junk), err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if seen := scanAll(t, r); len(seen) != 50 {
		t.Fatalf("scan: %d pages, want 50", len(seen))
	}
	if st := r.Stats(); !strings.Contains(fmt.Sprint(st.Errors), foreign) {
		t.Fatalf("%s not reported: %v", foreign, st.Errors)
	}
}

// A stray file named far beyond the store's segments (99999999.seg) made
// kspider check --repair fill the gap in the numbering with empty
// stand-ins: a hundred million files, each synced, for hours. A gap that
// large is refused, naming the file; nothing is written.
func TestRepairRefusesAHugeGap(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 40)
	stray := segmentPath(dir, 99999999)
	if err := os.WriteFile(stray, encodeSegmentHeader(99999999, storeID{}), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	withinDeadline(t, "check --repair with a stray 99999999.seg", func() {
		_, err := Check(dir, true, io.Discard)
		if err == nil || !strings.Contains(err.Error(), stray) {
			t.Errorf("check --repair: %v, want an error naming %s", err, stray)
		}
	})
	if after, err := listSegments(dir); err != nil || len(after) != len(before) {
		t.Fatalf("segments before the repair %d, after %d (%v)", len(before), len(after), err)
	}
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}
	checkStore(t, []string{dir}, 0, 40)
}

// The refusal of a huge gap said "segments A to B are missing" when a
// FIFO or a directory stood in it under a segment's name, which a Reader
// names; now the refusal, of a repair and of a writer, names them too.
func TestHugeGapNamesWhatStandsInIt(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 40)
	nums, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	stray, fifo, sub := segmentPath(dir, 99999999), segmentPath(dir, 5000), segmentPath(dir, 99999990)
	if err := os.WriteFile(stray, encodeSegmentHeader(99999999, storeID{}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	wants := []string{
		fmt.Sprintf("segments %s to %s are missing or not segment files: ", segmentName(nums[len(nums)-1]+1), segmentName(99999998)),
		fifo + " is a FIFO (named pipe), not a segment file",
		sub + " is a directory, not a segment file",
		"if " + stray + " is not this store's, move it out of the directory",
	}
	withinDeadline(t, "check --repair and a writer with a huge gap", func() {
		_, err := Check(dir, true, io.Discard)
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("check --repair: %v, want an error saying %q", err, want)
			}
		}
		s, err := Open(Config{Dirs: []string{dir}})
		if err == nil {
			s.Close()
		}
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open: %v, want an error saying %q", err, want)
			}
		}
	})
}

// The same stray file was taken in by a writer: an empty one got a
// segment header and the next pages, so the store's numbering jumped for
// good and every read reported the gap as damage, which no repair can
// mend. A writer's Open now refuses it, naming the file, and writes
// nothing.
func TestWriterRefusesAHugeGap(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 40)
	stray := segmentPath(dir, 99999999)
	if err := os.WriteFile(stray, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Config{Dirs: []string{dir}}); err == nil || !strings.Contains(err.Error(), stray) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open with a stray %s: %v, want an error naming it", stray, err)
	}
	if fi, err := os.Stat(stray); err != nil || fi.Size() != 0 {
		t.Fatalf("the stray file was written to: %v, %v", fi, err)
	}
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 40, 50)
	checkStore(t, []string{dir}, 0, 50)
}

// The temporary files a writer's index rebuild (url.idx.tmp) and a repair
// (NNNNNNNN.seg.repair) write were opened with O_TRUNC, following links:
// one of them left a symbolic link to another file (by a crash, or by
// someone with write access to the directory) had that file truncated and
// overwritten, a system file for a node run as root. The temporary file
// is now removed and created anew, never followed.
func TestTemporaryFileLinkIsNotFollowed(t *testing.T) {
	dir, spans := layoutStore(t, smallSegments(), 40)
	victim := filepath.Join(t.TempDir(), "victim")
	want := []byte("someone else's file\n")
	if err := os.WriteFile(victim, want, 0o644); err != nil {
		t.Fatal(err)
	}
	intact := func(when string) {
		t.Helper()
		if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: the file a temporary name linked to was changed: %d bytes, %v", when, len(got), err)
		}
	}
	ixTmp := filepath.Join(dir, indexName+".tmp")
	if err := os.Remove(filepath.Join(dir, indexName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, ixTmp); err != nil {
		t.Fatal(err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 40, 45) // rebuilds the index
	intact("a writer rebuilding url.idx")

	flipByte(t, segmentPath(dir, spans[3].seg), spans[3].off+70)
	repairTmp := segmentPath(dir, spans[3].seg) + ".repair"
	if err := os.Symlink(victim, repairTmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, ixTmp); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(dir, true, io.Discard); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	intact("check --repair")
	for _, p := range []string{ixTmp, repairTmp} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

// LOCK made a symbolic link to a file that does not exist had that file
// created by the next writer or repair (/etc/nologin, say, for a node run
// as root). Now a LOCK that is a link is refused, naming it, and nothing
// is created.
func TestLockLinkIsRefused(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 10)
	target := filepath.Join(t.TempDir(), "nologin")
	lock := filepath.Join(dir, "LOCK")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, lock); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Config{Dirs: []string{dir}}); err == nil || !strings.Contains(err.Error(), lock) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open with LOCK a link: %v, want an error naming %s", err, lock)
	}
	flipByte(t, segmentPath(dir, 1), 100)
	if _, err := Check(dir, true, io.Discard); err == nil || !strings.Contains(err.Error(), lock) {
		t.Errorf("check --repair with LOCK a link: %v, want an error naming %s", err, lock)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file LOCK links to was created: %v", err)
	}
}

// url.idx truncated while mapped (by hand, or another program) made the
// next touch of an entry beyond its new end a SIGBUS: a Reader's Get or
// Scan, and a writer's next index update, ended the process ("fatal
// error: fault"), a crawler reading pages back included. Now a Reader
// takes the entries it cannot read for damage, rebuilds its view from the
// segments and says so; a writer's saver stops with an error naming the
// index, its synced pages kept for the next open.
func TestIndexTruncatedWhileOpen(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 60)
	ixPath := filepath.Join(dir, indexName)
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Truncate(ixPath, indexHeaderSize); err != nil {
		t.Fatal(err)
	}
	p, err := r.Get(5)
	if err != nil {
		t.Fatalf("Get(5) with url.idx truncated under the reader: %v", err)
	}
	samePage(t, p, testPage(5))
	if seen := scanAll(t, r); len(seen) != 60 {
		t.Fatalf("scan: %d pages, want 60", len(seen))
	}
	if st := r.Stats(); !strings.Contains(fmt.Sprint(st.Errors), ixPath) {
		t.Fatalf("the truncated index is not reported: %v", st.Errors)
	}

	// A writer: the index truncated while it stores pages.
	var mu sync.Mutex
	durable := map[uint64]bool{}
	s, err := Open(Config{Dirs: []string{dir}, SyncEvery: 1, Logf: func(string, ...any) {},
		OnDurable: func(ids []uint64) {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				durable[id] = true
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(60); id < 80; id++ {
		if id == 70 {
			if err := os.Truncate(ixPath, indexHeaderSize); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			break // the only saver stopped
		}
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), ixPath) {
		t.Fatalf("Close after url.idx was truncated: %v, want an error naming it", err)
	}
	r2, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for id := range uint64(80) {
		if id < 60 || durable[id] {
			p, err := r2.Get(id)
			if err != nil {
				t.Fatalf("Get(%d), a page made durable: %v", id, err)
			}
			samePage(t, p, testPage(id))
		}
	}
}

// A segment cut while a Scan read it (a writer's recovery truncating a torn
// tail under a kspider stats, or by hand) stopped the whole Scan with
// "unexpected EOF": stats and export failed, every other page unread. Now
// what is left is read, the bytes gone are a damaged region named with the
// file and offset, and the pages the index had there are counted lost.
func TestSegmentCutWhileScanned(t *testing.T) {
	for _, cut := range []int64{5000, 10} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir, spans := layoutStore(t, smallSegments(), 60)
			nums, err := listSegments(dir)
			if err != nil {
				t.Fatal(err)
			}
			seg := nums[1]
			r, err := OpenReader([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := os.Truncate(segmentPath(dir, seg), cut); err != nil {
				t.Fatal(err)
			}
			var seen map[uint64]bool
			withinDeadline(t, "a scan of a segment cut under it", func() { seen = scanAll(t, r) })
			var lost int64
			for id, sp := range spans {
				gone := sp.seg == seg && sp.end > cut
				if gone {
					lost++
				}
				if seen[id] == gone {
					t.Errorf("page %d (segment %d, %d…%d): seen %v", id, sp.seg, sp.off, sp.end, seen[id])
				}
			}
			st := r.Stats()
			if st.Lost != lost || !strings.Contains(fmt.Sprint(st.Errors), segmentPath(dir, seg)) {
				t.Fatalf("lost %d, want %d, with damage naming %s: %v", st.Lost, lost, segmentPath(dir, seg), st.Errors)
			}
		})
	}
}

// cutLater reads a file as it is for its first reads, then as if it had
// been cut at cut: a truncation coming while a Scan is under way.
type cutLater struct {
	io.ReaderAt
	reads atomic.Int64
	after int64
	cut   int64
}

func (c *cutLater) ReadAt(p []byte, off int64) (int, error) {
	if c.reads.Add(1) <= c.after || off+int64(len(p)) <= c.cut {
		return c.ReaderAt.ReadAt(p, off)
	}
	if off >= c.cut {
		return 0, io.EOF
	}
	n, _ := c.ReaderAt.ReadAt(p[:c.cut-off], off)
	return n, io.EOF
}

// The cut of a segment met while resynchronising after a damaged record
// (the segment larger than a read window, cut after the scan began) still
// stopped the Scan, with an error naming no file. It is a damaged region
// too now.
func TestSegmentCutDuringAResync(t *testing.T) {
	dir, spans := layoutStore(t, Config{Compressors: 1}, 2200)
	// A record near the end of the scan's second read window, damaged:
	// the resync behind it reads past that window.
	var dmg recordSpan
	for _, sp := range spans {
		if sp.off > 2*readWindow-30000 && sp.end < 2*readWindow-2000 && (dmg.seg == 0 || sp.off < dmg.off) {
			dmg = sp
		}
	}
	if dmg.seg != 1 {
		t.Fatalf("no record where wanted in one segment: %+v", dmg)
	}
	flipByte(t, segmentPath(dir, 1), dmg.off+12) // its length: no record is known to follow it
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cut := dmg.end + 5000
	sf := r.dirs[0].segs[1]
	sf.ra = &cutLater{ReaderAt: sf.f, after: 2, cut: cut}
	var seen map[uint64]bool
	withinDeadline(t, "a scan of a segment cut during a resync", func() { seen = scanAll(t, r) })
	var lost int64
	for id, sp := range spans {
		gone := sp.end > cut || sp == dmg
		if gone {
			lost++
		}
		if gone == seen[id] {
			t.Errorf("page %d (%d…%d): seen %v", id, sp.off, sp.end, seen[id])
		}
	}
	if st := r.Stats(); st.Lost != lost || !strings.Contains(fmt.Sprint(st.Errors), "cut here while being read") {
		t.Fatalf("lost %d, want %d, and the cut reported: %v", st.Lost, lost, st.Errors)
	}
}

// A directory or a FIFO under the name of the segment a writer rolls to
// next, put there while it runs, stopped the saver with a bare 'open
// DIR/00000002.seg: file exists', saying neither what stood there nor
// what it meant. Now the error names the file, what it is, and that the
// directory takes no more pages until it is moved out; the thing in the
// way is left as it was.
func TestSegmentNameTakenWhenRolling(t *testing.T) {
	for _, kind := range []string{"a directory", "a FIFO (named pipe)"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallSegments()
			cfg.Dirs = []string{dir}
			writeStore(t, cfg, 0, 5)
			nums, err := listSegments(dir)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			next := segmentPath(dir, nums[len(nums)-1]+1)
			if kind == "a directory" {
				err = os.Mkdir(next, 0o755)
			} else {
				err = unix.Mkfifo(next, 0o644)
			}
			if err != nil {
				s.Close()
				t.Skipf("cannot make %s: %v", kind, err)
			}
			var putErr error
			for id := uint64(5); id < 1000 && putErr == nil; id++ {
				putErr = s.Put(context.Background(), testPage(id))
			}
			closeErr := s.Close()
			for _, err := range []error{putErr, closeErr} {
				if err == nil {
					t.Fatal("the writer rolled over the stray name without an error")
				}
				for _, want := range []string{next, kind + " stands under its name", "takes no more pages", "move it out"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error does not say %q: %v", want, err)
					}
				}
			}
			if fi, err := os.Lstat(next); err != nil || fi.Mode().IsRegular() {
				t.Errorf("the stray name was touched: %v, %v", fi, err)
			}
		})
	}
}

// A directory, FIFO or link under a segment's name after the last segment
// passed a writer's open, which takes only files for segments, and the
// saver stopped on reaching its number, hours into a crawl (one disk's
// directory then took no more pages); a Reader already called it damage.
// Now the open refuses it, naming it and what it is; a name the writer
// never reaches (below the last segment, in a gap) is left to the Reader.
func TestWriterRefusesAStrayNameAhead(t *testing.T) {
	for _, c := range []struct {
		kind string
		make func(path string) error
	}{
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"a FIFO (named pipe)", func(p string) error { return unix.Mkfifo(p, 0o644) }},
		{"a symbolic link", func(p string) error { return os.Symlink("elsewhere", p) }},
	} {
		dir, _ := layoutStore(t, smallSegments(), 40)
		nums, err := listSegments(dir)
		if err != nil {
			t.Fatal(err)
		}
		stray := segmentPath(dir, nums[len(nums)-1]+3)
		if err := c.make(stray); err != nil {
			t.Skipf("cannot make %s: %v", c.kind, err)
		}
		withinDeadline(t, "a writer's open with "+c.kind+" ahead", func() {
			s, err := Open(Config{Dirs: []string{dir}})
			if err == nil {
				s.Close()
				t.Errorf("%s under %s: the writer opened", c.kind, stray)
				return
			}
			for _, want := range []string{c.kind + " stands under the name " + stray, "after the last segment, " + segmentName(nums[len(nums)-1]), "move it out"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: the error does not say %q: %v", c.kind, want, err)
				}
			}
		})
		if fi, err := os.Lstat(stray); err != nil || fi.Mode().IsRegular() {
			t.Errorf("%s: the stray name was touched: %v, %v", c.kind, fi, err)
		}
		if err := os.Remove(stray); err != nil {
			t.Fatal(err)
		}
		writeStore(t, Config{Dirs: []string{dir}}, 40, 50)
		checkStore(t, []string{dir}, 0, 50)
	}
}

// url.idx a symbolic link to another store's index (a copy made with
// cp -s, a slip, or a hostile link) was followed: a writer wrote its
// entries and checkpoints into the other store's index, and a Reader took
// the other's checkpoint for this store's ('truncated before the index
// checkpoint: N bytes lost'). Now the link is damage like a damaged
// index: a Reader reads the segments instead, saying it is a link, and a
// writer replaces the link with an index of its own, rebuilt from the
// segments; the file it led to is left as it was.
func TestIndexLinkIsNotFollowed(t *testing.T) {
	dir, _ := layoutStore(t, smallSegments(), 30)
	other, _ := layoutStore(t, smallSegments(), 40)
	target := filepath.Join(other, indexName)
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	ix := filepath.Join(dir, indexName)
	if err := os.Remove(ix); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, ix); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	r.Close()
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Error(), ix+": corrupt record: a symbolic link, not a file of the store's own; reading the segments instead") {
		t.Errorf("a reader with url.idx a link: %v", st.Errors)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 30, 35)
	if after, err := os.ReadFile(target); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the other store's index was written through the link (%v)", err)
	}
	if fi, err := os.Lstat(ix); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("url.idx after a writer: %v, %v, want a file of its own", fi, err)
	}
	checkStore(t, []string{dir}, 0, 35)
	checkStore(t, []string{other}, 0, 40)
}
