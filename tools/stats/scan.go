package stats

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kspider/kspider/storage"
)

// PageSource is a store to read pages from: storage.Reader, whose Scan calls
// fn from one goroutine per data directory.
type PageSource interface {
	Scan(ctx context.Context, fn func(p *storage.Page) error) error
}

// ScanWorkers reads every page of src and hands each to one of workers
// goroutines (0 means GOMAXPROCS). newWorker is called once per goroutine
// and returns what that goroutine does with its pages, so each can keep
// buffers of its own. Per-page work (link extraction, gzip) costs several
// times what reading the store does, so a store on fewer disks than cores
// would leave cores idle if the scan's own goroutines did it. The first
// error a worker returns stops the scan and is returned; otherwise the
// scan's error; a scan interrupted (ctx ended) is its error even when the
// store's scan had ended, with pages still queued to workers, which drop
// them.
func ScanWorkers(ctx context.Context, src PageSource, workers int, newWorker func() func(*storage.Page) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan *storage.Page, 2*workers)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		workerErr error
		dropped   atomic.Bool // a page left unprocessed because ctx ended
	)
	for range workers {
		fn := newWorker()
		wg.Go(func() {
			for p := range pages {
				if ctx.Err() != nil {
					dropped.Store(true)
					continue // stopping: drain, so the scan is not left blocked
				}
				if err := fn(p); err != nil {
					mu.Lock()
					if workerErr == nil {
						workerErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	err := src.Scan(ctx, func(p *storage.Page) error {
		select {
		case pages <- p:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(pages)
	wg.Wait()
	if workerErr != nil {
		return workerErr
	}
	if err == nil && dropped.Load() {
		return ctx.Err()
	}
	return err
}

// AddAll adds every page of src, on workers goroutines (see ScanWorkers).
func (c *Collector) AddAll(ctx context.Context, src PageSource, workers int) error {
	return ScanWorkers(ctx, src, workers, func() func(*storage.Page) error {
		return func(p *storage.Page) error {
			c.Add(p)
			return nil
		}
	})
}
