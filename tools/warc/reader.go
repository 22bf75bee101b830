package warc

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits a Reader enforces, so a hostile or corrupt file costs bounded memory.
const (
	// bytes in one header line: a WARC-Target-URI of the longest URL a
	// store holds (64 KiB), its bytes that are not UTF-8 percent-encoded
	// into three each, takes 192 KiB
	maxFieldLine = 256 << 10
	maxFields    = 1000    // fields in one record header
	maxBlock     = 1 << 30 // bytes in one record block
)

// Record is one record as read back.
type Record struct {
	Version string  // "WARC/1.1"
	Fields  []Field // in file order, Content-Length included
	Block   []byte
}

// Get returns the value of the first field named name (case-insensitive), or
// "".
func (r *Record) Get(name string) string {
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Reader reads the records of a WARC file, gzipped (any member layout) or
// not. It is an independent check of Writer's output: it uses the standard
// library's gzip, not the writer's.
type Reader struct {
	br  *bufio.Reader
	n   int // records read
	err error
}

// NewReader returns a Reader on r, recognising gzip by its magic bytes.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("warc: %w", err)
		}
		br = bufio.NewReader(zr)
	}
	return &Reader{br: br}, nil
}

// Next returns the next record, or io.EOF after the last one. An error names
// the record (by its position) and what was wrong.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		if err != io.EOF {
			err = fmt.Errorf("warc: record %d: %w", r.n+1, err)
		}
		r.err = err
		return nil, err
	}
	r.n++
	return rec, nil
}

func (r *Reader) next() (*Record, error) {
	version, err := r.line()
	if err == io.EOF && version == "" {
		return nil, io.EOF
	}
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if version != "WARC/1.1" && version != "WARC/1.0" {
		return nil, fmt.Errorf("version line is %q, want WARC/1.1 or WARC/1.0", clipString(version))
	}
	rec := &Record{Version: version}
	length := int64(-1)
	for {
		line, err := r.line()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if line == "" {
			break
		}
		if len(rec.Fields) == maxFields {
			return nil, fmt.Errorf("more than %d header fields", maxFields)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("header line %q is not \"Name: value\"", clipString(line))
		}
		value = strings.TrimSpace(value)
		rec.Fields = append(rec.Fields, Field{name, value})
		if strings.EqualFold(name, "Content-Length") {
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 || n > maxBlock {
				return nil, fmt.Errorf("bad Content-Length %q", clipString(value))
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("no Content-Length")
	}
	var block bytes.Buffer
	if n, err := io.CopyN(&block, r.br, length); err != nil {
		return nil, fmt.Errorf("block ends after %d of %d bytes: %w", n, length, unexpectedEOF(err))
	}
	rec.Block = block.Bytes()
	var end [4]byte
	if _, err := io.ReadFull(r.br, end[:]); err != nil || string(end[:]) != "\r\n\r\n" {
		return nil, fmt.Errorf("record does not end with CRLF CRLF after its %d-byte block", length)
	}
	return rec, nil
}

// line reads one CRLF-terminated line without its terminator.
func (r *Reader) line() (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := r.br.ReadLine()
		b = append(b, chunk...)
		if len(b) > maxFieldLine {
			return "", fmt.Errorf("header line longer than %d bytes", maxFieldLine)
		}
		if err != nil {
			return string(b), err
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func clipString(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
