package stats

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kspider/kspider/storage"
)

// Progress redraws one status line on a terminal while a scan runs: a bar of
// how much of the store has been read (when the scan can tell), then the pages
// and raw megabytes so far and the rate. Elsewhere (a log file, a pipe) it
// prints that line as a line of its own each time.
type Progress struct {
	w     io.Writer
	tty   bool
	c     PageCounts
	scan  ScanProgress
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
}

// PageCounts is what a scan's consumer has done so far: pages and their raw
// bytes (Collector and PageCount have it).
type PageCounts interface {
	Progress() (pages, bytes int64)
}

// PageCount counts pages and their raw bytes (header and body) for a
// Progress line. It is safe for concurrent use.
type PageCount struct {
	pages, bytes atomic.Int64
}

// Add counts p.
func (n *PageCount) Add(p *storage.Page) {
	n.pages.Add(1)
	n.bytes.Add(int64(len(p.Header) + len(p.Body)))
}

// Progress returns the pages and bytes counted so far.
func (n *PageCount) Progress() (pages, bytes int64) { return n.pages.Load(), n.bytes.Load() }

// ScanProgress is what a scan says of its progress: bytes read so far out of
// the total (storage.Reader has it). A total of 0 means unknown.
type ScanProgress interface {
	Progress() (scanned, total int64)
}

// StartProgress starts drawing the line every interval on w: redrawn in
// place when w is a terminal (terminal set), else printed as a line each
// time, so a log of a long scan shows it going on. scan may be nil: the
// line then shows no bar.
func StartProgress(w io.Writer, c PageCounts, scan ScanProgress, interval time.Duration, terminal bool) *Progress {
	p := &Progress{w: w, tty: terminal, c: c, scan: scan, start: time.Now(), stop: make(chan struct{})}
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

// Stop ends the drawing; on a terminal it draws the final line and ends it
// with a newline (elsewhere the command's summary that follows says it).
func (p *Progress) Stop() {
	close(p.stop)
	p.done.Wait()
	if p.tty {
		p.draw("\n")
	}
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
	line := fmt.Sprintf("%sscanned %d pages, %.1f MB raw, %.1f MB/s, %.0fs", p.bar(), pages, mb, rate, secs)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	spin := spinner[int(secs*4)%len(spinner)]
	if end != "" {
		spin = ' '
	}
	fmt.Fprintf(p.w, "\r\x1b[K%c %s%s", spin, line, end)
}

const barWidth = 30

// bar renders "[#####.....]  45% " from the scan's progress, or nothing
// when the total is unknown.
func (p *Progress) bar() string {
	if p.scan == nil {
		return ""
	}
	done, total := p.scan.Progress()
	if total <= 0 {
		return ""
	}
	frac := min(max(float64(done)/float64(total), 0), 1)
	n := int(frac * barWidth)
	return fmt.Sprintf("[%s%s] %3.0f%% ", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), frac*100)
}

// IsTerminal reports whether w is a terminal (a progress line would be
// noise in a file or pipe).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f.Fd())
}
