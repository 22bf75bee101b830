package spider

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestProgressLines(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	cur := Counters{Phase: 1, Phases: 3}
	var out bytes.Buffer
	p := &Progress{W: &out, Snapshot: func() Counters { return cur }, Now: func() time.Time { return now }}
	p.Start()
	now = now.Add(2 * time.Second)
	cur.Pages, cur.Bytes, cur.URLs, cur.Queue, cur.Errors = 9000, 30e6, 1234567, 4321, 7
	p.Tick()
	now = now.Add(time.Second)
	cur.Pages, cur.Bytes, cur.Phase = 9500, 31e6, -1
	p.Tick()
	p.Finish()
	want := "2s pages 9,000  4500/s  15.0 MB/s  urls 1,234,567  queue 4,321  phase 1/3  errors 7\n" +
		"3s pages 9,500  500/s  1.0 MB/s  urls 1,234,567  queue 4,321  phase none  errors 7\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}

	// On a terminal the line is redrawn in place and ended by Finish.
	out.Reset()
	p.Terminal = true
	p.Start()
	now = now.Add(time.Second)
	p.Tick()
	p.Tick() // no time passed: no rate, no division by zero
	p.Finish()
	lines := strings.Split(out.String(), "\r\x1b[K")
	if len(lines) != 3 || lines[0] != "" || !strings.HasSuffix(lines[2], "errors 7\n") || !strings.Contains(lines[2], "  0/s  0.0 MB/s") {
		t.Errorf("terminal output %q", out.String())
	}

	// A counter that went down (a restart) gives a rate of 0.
	if l := ProgressLine(Counters{Pages: 10}, Counters{Pages: 5}, time.Second, time.Minute); !strings.Contains(l, "pages 5  0/s") {
		t.Errorf("line after a counter reset: %q", l)
	}
}

func TestProgressRunEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	p := &Progress{W: &out, Snapshot: func() Counters { return Counters{} }, Interval: time.Hour, Terminal: true}
	p.Run(ctx) // returns at once: the context has ended
	if out.Len() != 0 {
		t.Errorf("output %q", out.String())
	}
}

func TestSummaryLine(t *testing.T) {
	c := Counters{Pages: 12000, Bytes: 240e6, URLs: 50000, Queue: 38000, Errors: 3}
	got := SummaryLine(c, 2*time.Minute, RunFinished)
	want := "crawl finished after 2m0s: 12,000 pages stored (100/s), 240.0 MB (2.0 MB/s), 50,000 URLs known, 38,000 queued, 3 errors"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := SummaryLine(c, 0, RunDrained); !strings.HasPrefix(got, "crawl drained (run again on the same directory to continue) after 0s") {
		t.Errorf("drained: %q", got)
	}
	if got := SummaryLine(c, 0, RunInterrupted); !strings.HasPrefix(got, "crawl interrupted (run again on the same directory to continue) after 0s") {
		t.Errorf("interrupted: %q", got)
	}
	if got := SummaryLine(c, 0, RunFailed); !strings.HasPrefix(got, "crawl stopped by an error (named below) after 0s") {
		t.Errorf("failed: %q", got)
	}
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", 1<<64 - 1: "18,446,744,073,709,551,615"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q", n, got)
		}
	}
}
