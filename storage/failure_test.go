package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// durableSet collects OnDurable reports.
type durableSet struct {
	mu  sync.Mutex
	ids map[uint64]int
}

func (d *durableSet) add(ids []uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids = map[uint64]int{}
	}
	for _, id := range ids {
		d.ids[id]++
	}
}

func TestFailingDirectoryHandsItsRecordsToTheOthers(t *testing.T) {
	bad, good := t.TempDir(), t.TempDir()
	var calls atomic.Int64
	var durable durableSet
	cfg := Config{Dirs: []string{bad, good}, SyncEvery: 10, OnDurable: durable.add,
		failWrite: func(dir string) error {
			if dir == bad && calls.Add(1) > 12 {
				return syscall.EIO
			}
			return nil
		}}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	for id := uint64(0); id < n; id++ {
		if err := s.Put(context.Background(), testPage(id)); err != nil {
			t.Fatalf("Put(%d) with one saver left: %v", id, err)
		}
	}
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close() = %v, want the failed directory's I/O error", err)
	}
	if got := s.Durable(); got != n {
		t.Fatalf("Durable() = %d, want %d: records were lost", got, n)
	}
	if len(durable.ids) != n {
		t.Fatalf("OnDurable reported %d distinct pages, want %d", len(durable.ids), n)
	}
	checkStore(t, []string{bad, good}, 0, n)
	// The failed directory is usable again once its disk is.
	writeStore(t, Config{Dirs: []string{bad, good}}, n, n+50)
	checkStore(t, []string{bad, good}, 0, n+50)
}

func TestEverySaverFailing(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int64
	var durable durableSet
	s, err := Open(Config{Dirs: []string{dir}, SyncEvery: 5, OnDurable: durable.add,
		failWrite: func(string) error {
			if calls.Add(1) > 20 {
				return syscall.ENOSPC
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	var putErr error
	for id := uint64(0); id < 5000 && putErr == nil; id++ {
		putErr = s.Put(context.Background(), testPage(id))
	}
	if putErr == nil || !errors.Is(putErr, syscall.ENOSPC) {
		t.Fatalf("Put kept succeeding with no saver left (last error %v)", putErr)
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Close() = %v, want an error naming %s", err, dir)
	}
	// What was reported durable is intact.
	r, err := OpenReader([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(durable.ids) == 0 {
		t.Fatal("nothing was durable before the failure; the test proves little")
	}
	for id := range durable.ids {
		p, err := r.Get(id)
		if err != nil {
			t.Fatalf("durable page %d: %v", id, err)
		}
		samePage(t, p, testPage(id))
	}
}

// TestDiskFull fills a real, tiny tmpfs: its saver stops with ENOSPC, the
// other directory takes every page, and what the full one had synced stays
// readable. It needs to mount (root); otherwise it skips.
func TestDiskFull(t *testing.T) {
	small := t.TempDir()
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "kspider-test", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", small).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", small, err, out)
		}
	})
	big := t.TempDir()
	var durable durableSet
	s, err := Open(Config{Dirs: []string{small, big}, Codec: "none", SyncEvery: 8, OnDurable: durable.add})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 400 // 400 × 8 KiB of random bytes: three times the tmpfs
	pages := make([]*Page, n)
	for i := range pages {
		p := testPage(uint64(i))
		p.Body = make([]byte, 8<<10)
		for j := range p.Body {
			p.Body[j] = byte(rng.Uint32())
		}
		pages[i] = p
		if err := s.Put(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Close()
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), small) {
		t.Fatalf("Close() = %v, want ENOSPC naming %s", err, small)
	}
	if len(durable.ids) != n {
		t.Fatalf("%d pages durable, want %d", len(durable.ids), n)
	}
	r, err := OpenReader([]string{small, big})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	inSmall := 0
	for _, want := range pages {
		got, err := r.Get(want.URLID)
		if err != nil {
			t.Fatal(err)
		}
		samePage(t, got, want)
	}
	err = r.Scan(context.Background(), func(*Page) error { return nil })
	if err != nil || r.Skipped() != 0 {
		t.Fatalf("scan after disk full: %v, %d regions skipped: %v", err, r.Skipped(), r.Stats().Errors)
	}
	for _, d := range r.dirs[:1] {
		inSmall = len(d.order)
	}
	t.Logf("full directory kept %d segment(s); %s", inSmall, fmt.Sprint(err))
}

// An unusable directory is a clear error from Open.
func TestOpenUnusableDirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dirs: []string{t.TempDir(), f}}); err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("Open over a regular file: %v", err)
	}
	if _, err := OpenReader([]string{f}); err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("OpenReader over a regular file: %v", err)
	}
	if _, err := Open(Config{Dirs: []string{"/proc/kspider-storage-test"}}); err == nil {
		t.Fatal("Open under /proc succeeded")
	}
}

// Put blocks, not drops, when the savers are slow, and honours its context.
func TestBackPressure(t *testing.T) {
	release := make(chan struct{})
	var stall atomic.Bool
	s, err := Open(Config{Dirs: []string{t.TempDir()}, QueueLen: 2, Compressors: 1,
		failWrite: func(string) error {
			if stall.Load() {
				<-release
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	stall.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var err2 error
	accepted := 0
	for id := uint64(0); id < 100; id++ {
		if err2 = s.Put(ctx, testPage(id)); err2 != nil {
			break
		}
		accepted++
	}
	if !errors.Is(err2, context.DeadlineExceeded) || accepted >= 100 {
		t.Fatalf("Put with a stalled saver: %d accepted, last error %v", accepted, err2)
	}
	close(release)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.Durable(); got != uint64(accepted) {
		t.Fatalf("Durable() = %d, want the %d accepted pages", got, accepted)
	}
}

// TestReadOnlyDirectory bind-mounts a store read-only: a Reader reads it
// (it never writes), a writer's Open fails naming the directory. Needs
// root to mount; otherwise it skips.
func TestReadOnlyDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("bind-mounting needs root")
	}
	dir, ro := t.TempDir(), t.TempDir()
	writeStore(t, Config{Dirs: []string{dir}}, 0, 40)
	if out, err := exec.Command("mount", "--bind", "-o", "ro", dir, ro).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", ro).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", ro, err, out)
		}
	})
	if err := os.WriteFile(filepath.Join(ro, "probe"), nil, 0o644); err == nil {
		t.Skip("the bind mount is writable (old mount(8) ignoring ro)")
	}
	checkStore(t, []string{ro}, 0, 40)
	_, err := Open(Config{Dirs: []string{t.TempDir(), ro}})
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), ro) {
		t.Fatalf("Open over a read-only directory: %v, want EROFS naming %s", err, ro)
	}
}

// A segment numbered 4294967295 made the next segment's number wrap
// around to 0: a saver wrote pages into 00000000.seg, which no reader
// lists, and reported them durable; Close said nothing. (A stray file of
// that number is refused for the gap before it, TestWriterRefusesAHugeGap;
// an index checkpoint naming it still leads here.) Now creating segment 0
// is an error naming the last number, and nothing is written.
func TestSegmentNumbersExhausted(t *testing.T) {
	dir, _ := layoutStore(t, Config{}, 20)
	ix, err := openIndex(filepath.Join(dir, indexName), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.setCheckpoint(1<<32-1, segmentHeaderSize); err != nil {
		t.Fatal(err)
	}
	ix.close()
	s, err := Open(Config{Dirs: []string{dir}})
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "4294967295.seg") {
		t.Fatalf("Open() = %v, want an error naming the last segment number", err)
	}
	if _, err := os.Stat(segmentPath(dir, 0)); err == nil {
		t.Fatal("segment 0, which no reader reads, was created")
	}
	if _, err := Check(dir, true, io.Discard); err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	writeStore(t, Config{Dirs: []string{dir}}, 20, 30)
	checkStore(t, []string{dir}, 0, 30)
}
