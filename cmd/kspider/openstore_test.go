package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Without a usable index the open reads every segment, as long as the
// scan: Ctrl-C said 'stopping in order' and nothing stopped until the
// open was done, then 'interrupted after 0 pages'. Now the open itself
// ends, and the message says the store was being opened.
func TestOfflineToolsInterruptedWhileOpening(t *testing.T) {
	dirs, args := buildTestStore(t, 2, "lzo")
	for _, d := range dirs {
		if err := os.Remove(filepath.Join(d, "url.idx")); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "x.warc.gz")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range [][]string{
		append([]string{"export", "warc", "--out", out}, args...),
		append([]string{"stats"}, args...),
		append(append([]string{"get"}, args...), "1"),
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, env{stdout: &stdout, stderr: &stderr}, c)
		want := "kspider " + c[0] + ": interrupted while opening the store, reading the segments its index does not cover (0.0 MB of "
		if code != 1 || !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("%s, interrupted: exit %d, want 1 and %q\n%s", c[0], code, want, stderr.String())
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted export left %s: %v", out, err)
	}
}

type fixedProgress struct{ read, total int64 }

func (p fixedProgress) Progress() (int64, int64) { return p.read, p.total }

// lineWriter hands each write to a channel.
type lineWriter chan string

func (w lineWriter) Write(b []byte) (int, error) { w <- string(b); return len(b), nil }

func TestShowOpenProgress(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		w := make(lineWriter, 1000)
		stop := showOpenProgress(w, terminal, "stats", fixedProgress{25e5, 10e6}, time.Millisecond)
		var line string
		select {
		case line = <-w:
		case <-time.After(20 * time.Second):
			t.Fatal("no progress shown")
		}
		stop()
		want := "kspider stats: opening the store: reading the segments its index does not cover, 2.5 MB of 10.0 MB (25%)"
		if terminal {
			want = clearProgressLine + want
		} else {
			want += "\n"
		}
		if line != want {
			t.Errorf("terminal %v: %q, want %q", terminal, line, want)
		}
		close(w)
		var last string
		for l := range w {
			last = l
		}
		if terminal && last != clearProgressLine {
			t.Errorf("on a terminal the line is not cleared at the end: last %q", last)
		}
	}
}
