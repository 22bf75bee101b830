package storage

import (
	"context"
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
