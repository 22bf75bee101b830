package spider

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Counters is a snapshot of what a running node has done, for its
// progress line and final summary. Counts only grow, but for Queue.
type Counters struct {
	Pages  uint64 // pages stored (made durable)
	Bytes  uint64 // their body bytes
	URLs   uint64 // URLs known (in the URL tree)
	Queue  uint64 // URLs waiting to be fetched
	Errors uint64 // failed fetches
	Phase  int    // the active phase, or -1 when none (unsafe clock, guard interval)
	Phases int    // number of phases
}

// Progress writes a progress line to W every Interval while Run runs:
// pages, pages/s and MB/s over the last interval, URLs known, the queue,
// the active phase and errors. On a terminal the line is redrawn in place;
// elsewhere (a log file, journald) each is a line of its own.
type Progress struct {
	W        io.Writer
	Snapshot func() Counters
	Interval time.Duration    // 1 s when 0
	Terminal bool             // redraw in place
	Now      func() time.Time // time.Now when nil; tests set a fake clock

	start, at time.Time
	prev      Counters
	drawn     bool
}

func (p *Progress) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Start records the starting point of the rates; Run calls it.
func (p *Progress) Start() {
	p.start = p.now()
	p.at = p.start
	p.prev = p.Snapshot()
}

// Run draws a line every Interval until ctx ends, then ends the line.
func (p *Progress) Run(ctx context.Context) {
	every := p.Interval
	if every <= 0 {
		every = time.Second
	}
	p.Start()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.Finish()
			return
		case <-t.C:
			p.Tick()
		}
	}
}

// Tick draws one line with the rates since the previous one.
func (p *Progress) Tick() {
	now := p.now()
	cur := p.Snapshot()
	line := ProgressLine(p.prev, cur, now.Sub(p.at), now.Sub(p.start))
	p.prev, p.at = cur, now
	if p.Terminal {
		fmt.Fprintf(p.W, "\r\x1b[K%s", line)
		p.drawn = true
	} else {
		fmt.Fprintln(p.W, line)
	}
}

// Finish ends a line redrawn in place, so what follows starts on its own.
func (p *Progress) Finish() {
	if p.Terminal && p.drawn {
		fmt.Fprintln(p.W)
		p.drawn = false
	}
}

// ProgressLine formats cur, with rates from prev taken dt earlier.
func ProgressLine(prev, cur Counters, dt, elapsed time.Duration) string {
	var pps, mbps float64
	if s := dt.Seconds(); s > 0 {
		pps = float64(sub(cur.Pages, prev.Pages)) / s
		mbps = float64(sub(cur.Bytes, prev.Bytes)) / 1e6 / s
	}
	phase := "none"
	if cur.Phase >= 0 {
		phase = fmt.Sprintf("%d/%d", cur.Phase, cur.Phases)
	}
	return fmt.Sprintf("%s pages %s  %.0f/s  %.1f MB/s  urls %s  queue %s  phase %s  errors %s",
		round(elapsed), count(cur.Pages), pps, mbps, count(cur.URLs), count(cur.Queue), phase, count(cur.Errors))
}

// How a run ended, for SummaryLine.
const (
	RunFinished    = "finished"
	RunInterrupted = "interrupted (run again on the same directory to continue)"
	RunDrained     = "drained (run again on the same directory to continue)"
	// RunFailed: a fatal error (a full disk, a store that failed) stopped
	// the crawl; the caller names it. Not "interrupted": running again
	// before the error is dealt with meets it again.
	RunFailed = "stopped by an error (named below)"
)

// SummaryLine is the final report of a crawl: totals and average rates, and
// how it ended (RunFinished, RunInterrupted, RunDrained, RunFailed).
func SummaryLine(c Counters, elapsed time.Duration, how string) string {
	var pps, mbps float64
	if s := elapsed.Seconds(); s > 0 {
		pps = float64(c.Pages) / s
		mbps = float64(c.Bytes) / 1e6 / s
	}
	return fmt.Sprintf("crawl %s after %s: %s pages stored (%.0f/s), %.1f MB (%.1f MB/s), %s URLs known, %s queued, %s errors",
		how, round(elapsed), count(c.Pages), pps, float64(c.Bytes)/1e6, mbps, count(c.URLs), count(c.Queue), count(c.Errors))
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // a counter reset (a restart) is not a negative rate
	}
	return a - b
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// count writes n with thousands separators: 1234567 is "1,234,567".
func count(n uint64) string {
	s := fmt.Sprint(n)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
