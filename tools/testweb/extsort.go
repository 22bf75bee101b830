package testweb

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// extSorter sorts byte records bytewise in bounded memory: once it holds
// limit bytes it sorts them and writes them to a temporary file (a run), and
// iterating merges the runs. The audit sorts a log's requests and
// connections with it, which held every entry of a 400 MB log at once
// (2.7 GB). A limit of 0 never spills: for entries already in memory.
type extSorter struct {
	dir   string
	limit int
	arena []byte
	recs  []recSpan
	runs  []*os.File
	// held and spills say what the sorter did, for tests of its bounds.
	held, spills int
}

type recSpan struct{ off, end int }

// maxRuns bounds the runs merged at once, and so the files open at once
// and their read buffers; more runs are first merged into one.
const maxRuns = 32

// recOverhead is what a record costs besides its bytes (its recSpan).
const recOverhead = 16

func newExtSorter(dir string, limit int) *extSorter {
	return &extSorter{dir: dir, limit: limit}
}

func (s *extSorter) add(rec []byte) error {
	if s.limit > 0 && len(s.recs) > 0 && len(s.arena)+recOverhead*(len(s.recs)+1)+len(rec) > s.limit {
		if err := s.spill(); err != nil {
			return err
		}
	}
	off := len(s.arena)
	s.arena = append(s.arena, rec...)
	s.recs = append(s.recs, recSpan{off, len(s.arena)})
	s.held = max(s.held, len(s.arena)+recOverhead*len(s.recs))
	return nil
}

func (s *extSorter) sortHeld() {
	sort.Slice(s.recs, func(i, j int) bool {
		a, b := s.recs[i], s.recs[j]
		return bytes.Compare(s.arena[a.off:a.end], s.arena[b.off:b.end]) < 0
	})
}

// spill writes the held records, sorted, to a new run.
func (s *extSorter) spill() error {
	s.sortHeld()
	mem := &memSource{s: s}
	if err := s.writeRun([]recSource{mem}); err != nil {
		return err
	}
	s.arena, s.recs = s.arena[:0], s.recs[:0]
	s.spills++
	if len(s.runs) >= maxRuns {
		runs := s.runs
		s.runs = nil
		srcs := make([]recSource, len(runs))
		for i, f := range runs {
			fs, err := newFileSource(f)
			if err != nil {
				closeRuns(runs)
				return err
			}
			srcs[i] = fs
		}
		err := s.writeRun(srcs)
		closeRuns(runs)
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRun merges srcs into a new temporary file appended to the runs.
func (s *extSorter) writeRun(srcs []recSource) error {
	f, err := os.CreateTemp(s.dir, "testweb-audit-*")
	if err != nil {
		return fmt.Errorf("testweb: audit: a temporary file for sorting the log: %w", err)
	}
	// Unlinked at once, so that nothing is left behind however the audit
	// ends; where that is refused (an open file on Windows) closeRuns
	// removes it.
	os.Remove(f.Name())
	s.runs = append(s.runs, f)
	bw := bufio.NewWriterSize(f, 64<<10)
	var n [binary.MaxVarintLen64]byte
	m, err := newMerge(srcs)
	for err == nil {
		var rec []byte
		rec, err = m.next()
		if err != nil {
			break
		}
		bw.Write(n[:binary.PutUvarint(n[:], uint64(len(rec)))])
		bw.Write(rec)
	}
	if err != io.EOF {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("testweb: audit: writing %s: %w", f.Name(), err)
	}
	return nil
}

// iter returns the records in order. The sorter must not be added to after.
func (s *extSorter) iter() (*merge, error) {
	s.sortHeld()
	srcs := []recSource{&memSource{s: s}}
	for _, f := range s.runs {
		fs, err := newFileSource(f)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, fs)
	}
	return newMerge(srcs)
}

// close removes the sorter's temporary files.
func (s *extSorter) close() {
	closeRuns(s.runs)
	s.runs = nil
}

func closeRuns(runs []*os.File) {
	for _, f := range runs {
		f.Close()
		os.Remove(f.Name())
	}
}

// recSource yields sorted records; a record is valid until the next call.
type recSource interface {
	next() ([]byte, error) // io.EOF after the last
}

type memSource struct {
	s *extSorter
	i int
}

func (m *memSource) next() ([]byte, error) {
	if m.i >= len(m.s.recs) {
		return nil, io.EOF
	}
	r := m.s.recs[m.i]
	m.i++
	return m.s.arena[r.off:r.end], nil
}

type fileSource struct {
	name string
	br   *bufio.Reader
	buf  []byte
}

func newFileSource(f *os.File) (*fileSource, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("testweb: audit: rewinding %s: %w", f.Name(), err)
	}
	return &fileSource{name: f.Name(), br: bufio.NewReaderSize(f, 64<<10)}, nil
}

func (f *fileSource) next() ([]byte, error) {
	n, err := binary.ReadUvarint(f.br)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err == nil && n > maxLogLine+64 {
		err = errors.New("record length out of range")
	}
	if err == nil {
		if cap(f.buf) < int(n) {
			f.buf = make([]byte, n)
		}
		f.buf = f.buf[:n]
		_, err = io.ReadFull(f.br, f.buf)
	}
	if err != nil {
		return nil, fmt.Errorf("testweb: audit: reading back %s: %w", f.name, err)
	}
	return f.buf, nil
}

// merge yields the records of several sorted sources in order.
type merge struct {
	h   mergeHeap
	out []byte
}

type mergeItem struct {
	rec []byte
	src recSource
}

func newMerge(srcs []recSource) (*merge, error) {
	m := &merge{}
	for _, src := range srcs {
		rec, err := src.next()
		if err == io.EOF {
			continue
		}
		if err != nil {
			return nil, err
		}
		m.h = append(m.h, mergeItem{rec, src})
	}
	heap.Init(&m.h)
	return m, nil
}

// next returns the least record left, valid until the next call, or io.EOF.
func (m *merge) next() ([]byte, error) {
	if len(m.h) == 0 {
		return nil, io.EOF
	}
	top := &m.h[0]
	m.out = append(m.out[:0], top.rec...)
	rec, err := top.src.next()
	switch {
	case err == io.EOF:
		heap.Pop(&m.h)
	case err != nil:
		return nil, err
	default:
		top.rec = rec
		heap.Fix(&m.h, 0)
	}
	return m.out, nil
}

type mergeHeap []mergeItem

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return bytes.Compare(h[i].rec, h[j].rec) < 0 }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
