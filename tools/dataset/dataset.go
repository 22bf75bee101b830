// Package dataset finds and reads the project's benchmark and test inputs:
// the real data sets kept beside the repository in ../shared/data, and any
// URL or host list an operator names, plain or zstd-compressed.
//
// The data sets must never be copied into the repository; tests that need
// them skip when they are missing (see tools/testenv).
package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Names of the shared data sets (see ../shared/data/README.md).
const (
	URLsWeb      = "urls-web.txt.zst"      // ~1M real URLs, shuffled, one per line
	RobotsCorpus = "robots-corpus.tar.zst" // 50,849 real robots.txt files under robots/
	URLTestData  = "urltestdata.json"      // WHATWG URL conformance tests
)

// Dir returns the shared data directory: $KSPIDER_DATA if set, else
// shared/data beside the module root found by walking up from the working
// directory (tests run in their package's directory).
func Dir() (string, error) {
	if d := os.Getenv("KSPIDER_DATA"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("dataset: no go.mod above %s", wd)
		}
	}
}

// Path returns the path of the named shared data set and whether it exists.
func Path(name string) (string, bool) {
	dir, err := Dir()
	if err != nil {
		return "", false
	}
	p := filepath.Join(dir, name)
	_, err = os.Stat(p)
	return p, err == nil
}

// Open opens path for reading, decompressing it on the fly when its name ends
// in .zst.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".zst") {
		return f, nil
	}
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return &zstdFile{zr: zr, f: f}, nil
}

type zstdFile struct {
	zr *zstd.Decoder
	f  *os.File
}

func (z *zstdFile) Read(p []byte) (int, error) { return z.zr.Read(p) }
func (z *zstdFile) Close() error               { z.zr.Close(); return z.f.Close() }

// MaxLine is the longest line Lines accepts; longer lines are an error.
const MaxLine = 1 << 20

// LineStats counts what Lines saw.
type LineStats struct {
	Lines int // lines read, blank ones included
	Blank int // blank lines (after trimming a trailing CR), skipped
}

// Lines calls fn for every non-blank line of path (plain or .zst), without
// the line ending, in file order, stopping after limit lines when limit > 0.
// The slice passed to fn is only valid during the call.
func Lines(path string, limit int, fn func(line []byte) error) (LineStats, error) {
	var st LineStats
	r, err := Open(path)
	if err != nil {
		return st, err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		st.Lines++
		if len(line) == 0 {
			st.Blank++
			continue
		}
		if err := fn(line); err != nil {
			return st, err
		}
		if limit > 0 && st.Lines-st.Blank >= limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return st, fmt.Errorf("dataset: %s: line %d is longer than %d bytes", path, st.Lines+1, MaxLine)
		}
		return st, fmt.Errorf("dataset: %s: %w", path, err)
	}
	return st, nil
}
