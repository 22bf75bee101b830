package main

import (
	"fmt"
	"io"
	"sync"
)

// lockedWriter is stderr shared by the goroutines of a run: the progress
// line's and the node's, whose lines would otherwise interleave (and race
// on a test's buffer).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// clearProgressLine starts a line logged on a terminal: it clears the
// progress line drawn in place there, which is redrawn after it.
const clearProgressLine = "\r\x1b[K"

// nodeLogs returns the NodeConfig.Logf and URLLogf of a node run from the
// command line: the node's own lines go to w, each starting with prefix;
// the lines about single URLs, thousands on a large crawl, only when
// verbose. On a terminal, where the progress line is redrawn in place
// (spider.Progress), a line first clears it: the next second redraws it.
func nodeLogs(w io.Writer, prefix string, verbose, terminal bool) (logf, urlLogf func(string, ...any)) {
	if terminal {
		prefix = clearProgressLine + prefix
	}
	logf = func(format string, a ...any) {
		fmt.Fprintf(w, "%s%s\n", prefix, fmt.Sprintf(format, a...))
	}
	urlLogf = func(string, ...any) {}
	if verbose {
		urlLogf = logf
	}
	return logf, urlLogf
}
