package stats

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kspider/kspider/storage"
)

// fakeSource calls fn for n pages from dirs goroutines, as storage's Scan does.
type fakeSource struct{ n, dirs int }

func (s fakeSource) Scan(ctx context.Context, fn func(*storage.Page) error) error {
	var wg sync.WaitGroup
	errs := make([]error, s.dirs)
	for d := range s.dirs {
		wg.Go(func() {
			for i := d; i < s.n; i += s.dirs {
				if err := ctx.Err(); err != nil {
					errs[d] = err
					return
				}
				if err := fn(&storage.Page{URLID: uint64(i)}); err != nil {
					errs[d] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func TestScanWorkers(t *testing.T) {
	var seen atomic.Int64
	var workers atomic.Int64
	err := ScanWorkers(context.Background(), fakeSource{n: 1000, dirs: 2}, 3, func() func(*storage.Page) error {
		workers.Add(1)
		return func(*storage.Page) error {
			seen.Add(1)
			return nil
		}
	})
	if err != nil || seen.Load() != 1000 || workers.Load() != 3 {
		t.Fatalf("err %v, %d pages seen by %d workers; want 1000 by 3", err, seen.Load(), workers.Load())
	}
}

func TestScanWorkersStopsAtFirstError(t *testing.T) {
	boom := errors.New("disk full")
	var seen atomic.Int64
	err := ScanWorkers(context.Background(), fakeSource{n: 100000, dirs: 2}, 2, func() func(*storage.Page) error {
		return func(p *storage.Page) error {
			if seen.Add(1) == 10 {
				return boom
			}
			return nil
		}
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if n := seen.Load(); n > 1000 {
		t.Errorf("%d pages processed after the error", n)
	}
}

// doneSource is a store whose Scan has handed over every page and returned
// (closing returned) before the caller's workers are through them.
type doneSource struct {
	n        int
	returned chan struct{}
}

func (s doneSource) Scan(ctx context.Context, fn func(*storage.Page) error) error {
	defer close(s.returned)
	for i := range s.n {
		if err := fn(&storage.Page{URLID: uint64(i)}); err != nil {
			return err
		}
	}
	return nil
}

// A Ctrl-C that came after the store's scan had ended, while workers still
// had pages queued, made them drop those pages unseen and ScanWorkers return
// nil: an export so interrupted was committed without them, exit 0. An
// interrupted scan is an error however late it comes.
func TestScanWorkersInterruptedAfterTheScanEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := doneSource{n: 3, returned: make(chan struct{})}
	var seen atomic.Int64
	// One worker, whose queue holds 2 pages: it takes the first, the scan
	// queues the other two and returns, and then the interrupt comes.
	err := ScanWorkers(ctx, src, 1, func() func(*storage.Page) error {
		return func(*storage.Page) error {
			if seen.Add(1) == 1 {
				<-src.returned
				cancel()
			}
			return nil
		}
	})
	if n := seen.Load(); n != 3 && !errors.Is(err, context.Canceled) {
		t.Fatalf("%d of 3 pages processed, and ScanWorkers returned %v, want context.Canceled", n, err)
	}
}
