package stats

import (
	"context"
	"runtime"
	"sync"

	"github.com/kspider/kspider/storage"
)

// PageSource is a store to read pages from: storage.Reader, whose Scan calls
// fn from one goroutine per data directory.
type PageSource interface {
	Scan(ctx context.Context, fn func(p *storage.Page) error) error
}

// AddAll adds every page of src using workers goroutines (0 means
// GOMAXPROCS). Link extraction costs several times what reading the store
// does, so a store on fewer disks than cores would leave cores idle if pages
// were counted on the scan's own goroutines; they hand them over instead.
func (c *Collector) AddAll(ctx context.Context, src PageSource, workers int) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pages := make(chan *storage.Page, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range pages {
				c.Add(p)
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
	return err
}
