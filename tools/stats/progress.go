package stats

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress redraws one status line on a terminal while a scan runs: pages and
// raw megabytes so far and the rate. The store does not say in advance how
// many pages it holds, so it shows how far the scan has got, not how far it
// has to go.
type Progress struct {
	w     io.Writer
	c     *Collector
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
}

// StartProgress starts redrawing the line every interval on w (a terminal).
func StartProgress(w io.Writer, c *Collector, interval time.Duration) *Progress {
	p := &Progress{w: w, c: c, start: time.Now(), stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw("")
			}
		}
	}()
	return p
}

// Stop draws the final line and ends it with a newline.
func (p *Progress) Stop() {
	close(p.stop)
	p.done.Wait()
	p.draw("\n")
}

const spinner = `|/-\`

func (p *Progress) draw(end string) {
	pages, bytes := p.c.Progress()
	secs := time.Since(p.start).Seconds()
	mb := float64(bytes) / 1e6
	rate := 0.0
	if secs > 0 {
		rate = mb / secs
	}
	spin := spinner[int(secs*4)%len(spinner)]
	if end != "" {
		spin = ' '
	}
	fmt.Fprintf(p.w, "\r\x1b[K%c scanned %d pages, %.1f MB raw, %.1f MB/s, %.0fs%s", spin, pages, mb, rate, secs, end)
}

// IsTerminal reports whether w is a terminal (a progress line would be
// noise in a file or pipe).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f.Fd())
}
