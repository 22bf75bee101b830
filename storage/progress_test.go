package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestScanProgress checks that Progress counts every segment byte once: it
// starts at 0 and ends at the segments' total, damaged records included.
func TestScanProgress(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	writeStore(t, Config{Dirs: dirs, SegmentSize: 64 << 10}, 0, 300)
	segs, _ := filepath.Glob(filepath.Join(dirs[0], "*.seg"))
	if len(segs) < 2 {
		t.Fatalf("want several segments, got %v", segs)
	}
	flipByte(t, segs[0], segmentHeaderSize+100) // damage the first record

	r, err := OpenReader(dirs)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	scanned, total := r.Progress()
	if scanned != 0 || total <= 0 {
		t.Fatalf("before the scan: %d of %d", scanned, total)
	}
	if err := r.Scan(context.Background(), func(*Page) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Progress(); got != total {
		t.Errorf("after the scan: %d of %d bytes", got, total)
	}
	if r.Skipped() == 0 {
		t.Error("the damaged record was not skipped")
	}
}

// An open of a store without a usable index reads every segment, as long
// as a scan takes (hours for terabytes), and OpenReader could be neither
// followed nor interrupted: kspider stats, get and export sat silent
// through it, Ctrl-C said 'stopping in order' and nothing stopped.
// OpenReaderContext counts the bytes it reads (the total known before
// the first is read) and gives up when its context ends, files closed.
func TestOpenReaderProgressAndInterrupt(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	writeStore(t, Config{Dirs: dirs, SegmentSize: 64 << 10}, 0, 300)
	var segBytes int64
	for _, d := range dirs {
		segs, _ := filepath.Glob(filepath.Join(d, "*.seg"))
		for _, s := range segs {
			fi, err := os.Stat(s)
			if err != nil {
				t.Fatal(err)
			}
			segBytes += fi.Size()
		}
	}
	// A sound index covers every record: nothing to read.
	var p OpenProgress
	r, err := OpenReaderContext(context.Background(), dirs, &p)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if read, total := p.Progress(); read != 0 || total != 0 {
		t.Errorf("with a sound index: read %d of %d bytes, want none", read, total)
	}

	for _, d := range dirs {
		if err := os.Remove(filepath.Join(d, indexName)); err != nil {
			t.Fatal(err)
		}
	}
	fds := openFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = OpenProgress{}
	r, err = OpenReaderContext(ctx, dirs, &p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("an open with its context ended: %v, %v, want context.Canceled", r, err)
	}
	if read, total := p.Progress(); read != 0 || total != segBytes {
		t.Errorf("interrupted: read %d of %d bytes, want 0 of %d", read, total, segBytes)
	}
	if got := openFiles(t); got != fds {
		t.Errorf("%d files open after the interrupted open, %d before", got, fds)
	}

	p = OpenProgress{}
	r, err = OpenReaderContext(context.Background(), dirs, &p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if read, total := p.Progress(); read != segBytes || total != segBytes {
		t.Errorf("without an index: read %d of %d bytes, want all %d", read, total, segBytes)
	}
	for id := uint64(0); id < 300; id++ {
		if _, err := r.Get(id); err != nil {
			t.Fatalf("Get(%d): %v", id, err)
		}
	}
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}
