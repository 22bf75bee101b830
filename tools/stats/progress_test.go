package stats

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the progress goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressLine(t *testing.T) {
	var out syncBuffer
	c := New(Options{})
	scan := &fakeScan{total: 200}
	p := StartProgress(&out, c, scan, time.Millisecond, true)
	for _, pg := range testPages() {
		c.Add(pg)
	}
	scan.done.Store(100)
	time.Sleep(5 * time.Millisecond)
	p.Stop()
	s := out.String()
	if !strings.HasSuffix(s, "\n") || !strings.Contains(s, "scanned 7 pages") || !strings.HasPrefix(s, "\r\x1b[K") ||
		!strings.Contains(s, "[###############...............]  50% ") {
		t.Fatalf("progress output %q", s)
	}

	// Without a known total there is no bar, only the counts.
	out = syncBuffer{}
	p = StartProgress(&out, c, nil, time.Millisecond, true)
	p.Stop()
	if s := out.String(); strings.Contains(s, "%") || !strings.Contains(s, "scanned 7 pages") {
		t.Fatalf("progress output without a total %q", s)
	}
}

// Off a terminal (stderr to a log file, as under cron or nohup) a scan of
// hours said nothing until it ended; now it prints its line each interval,
// plain, without the terminal's redrawing.
func TestProgressLinesOffATerminal(t *testing.T) {
	var out syncBuffer
	c := New(Options{})
	for _, pg := range testPages() {
		c.Add(pg)
	}
	scan := &fakeScan{total: 200}
	scan.done.Store(200)
	p := StartProgress(&out, c, scan, time.Millisecond, false)
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.Stop()
	s := out.String()
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 2 || strings.Contains(s, "\r") || strings.Contains(s, "\x1b") {
		t.Fatalf("progress off a terminal %q, want plain lines", s)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "[##############################] 100% scanned 7 pages, ") {
			t.Errorf("progress line %q", l)
		}
	}
}

type fakeScan struct {
	done  atomic.Int64
	total int64
}

func (f *fakeScan) Progress() (int64, int64) { return f.done.Load(), f.total }

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is taken for a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is taken for a terminal")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to check the positive case: %v", err)
	}
	defer ptmx.Close()
	if isTerminal(ptmx.Fd()) != isLinux {
		t.Errorf("a pseudo-terminal is not recognised")
	}
}
