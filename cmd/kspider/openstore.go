package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kspider/kspider/storage"
	"github.com/kspider/kspider/tools/stats"
)

// openStore opens the store over dirs for the offline command cmd (stats,
// get, export). Without a usable index the open reads every segment, as
// long as the scan after it: it is shown on stderr as it goes, and Ctrl-C
// ends it.
func openStore(ctx context.Context, stderr io.Writer, cmd string, dirs []string) (*storage.Reader, error) {
	var p storage.OpenProgress
	terminal := stats.IsTerminal(stderr)
	stop := showOpenProgress(stderr, terminal, cmd, &p, progressEvery(terminal))
	r, err := storage.OpenReaderContext(ctx, dirs, &p)
	stop()
	if interrupted(ctx, err) {
		read, total := p.Progress()
		return nil, fmt.Errorf("interrupted while opening the store, reading the segments its index does not cover (%s of %s): nothing done", megabytes(read), megabytes(total))
	}
	return r, err
}

// showOpenProgress draws on w, every interval until stop is called, how
// far an open has read the segments it reads (p): redrawn in place on a
// terminal, and cleared at the end; elsewhere a line each time. An open
// that reads nothing (the index covers every record) shows nothing.
func showOpenProgress(w io.Writer, terminal bool, cmd string, p interface{ Progress() (read, total int64) }, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	drawn := false
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			read, total := p.Progress()
			if total == 0 {
				continue
			}
			line := fmt.Sprintf("kspider %s: opening the store: reading the segments its index does not cover, %s of %s (%.0f%%)",
				cmd, megabytes(read), megabytes(total), 100*float64(read)/float64(total))
			if terminal {
				fmt.Fprint(w, clearProgressLine+line)
			} else {
				fmt.Fprintln(w, line)
			}
			drawn = true
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		if drawn && terminal {
			fmt.Fprint(w, clearProgressLine)
		}
	}
}

// megabytes says n bytes in MB, one decimal.
func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
