package warc

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/gzip"
)

// Encoder turns records into gzip members without writing them, so that
// several goroutines can compress while one writes (Writer.WriteMember):
// compression is nearly all of an export's work. It is not safe for
// concurrent use; each goroutine keeps its own.
type Encoder struct {
	gz       *gzip.Writer
	out      bytes.Buffer
	head     []byte  // the record header being built, reused
	httpHead []byte  // a response block's status line and headers, reused
	fields   []Field // a response record's fields, reused
	end      []byte  // CRLF CRLF after the block
}

// NewEncoder returns an Encoder compressing at gzip's default level.
func NewEncoder() *Encoder {
	e, _ := NewEncoderLevel(gzip.DefaultCompression) // the level is valid
	return e
}

// NewEncoderLevel returns an Encoder compressing at level (1, fastest, to 9,
// smallest, or -1 for the default).
func NewEncoderLevel(level int) (*Encoder, error) {
	if level != gzip.DefaultCompression && (level < gzip.BestSpeed || level > gzip.BestCompression) {
		return nil, fmt.Errorf("warc: gzip level %d is not 1 to 9", level)
	}
	gz, err := gzip.NewWriterLevel(nil, level)
	if err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	return &Encoder{gz: gz, end: []byte("\r\n\r\n")}, nil
}

// Record encodes one record (see Writer.WriteRecord). The member is valid
// until the next call.
func (e *Encoder) Record(fields []Field, block []byte) ([]byte, error) {
	return e.record(fields, block)
}

// record encodes a record whose block is the concatenation of parts.
func (e *Encoder) record(fields []Field, parts ...[]byte) ([]byte, error) {
	for _, f := range fields {
		if err := checkField(f); err != nil {
			return nil, err
		}
	}
	h := append(e.head[:0], Version+"\r\n"...)
	for _, f := range fields {
		h = append(h, f.Name...)
		h = append(h, ": "...)
		h = append(h, f.Value...)
		h = append(h, "\r\n"...)
	}
	h = append(h, "Content-Length: "...)
	blockLen := 0
	for _, p := range parts {
		blockLen += len(p)
	}
	h = strconv.AppendInt(h, int64(blockLen), 10)
	h = append(h, "\r\n\r\n"...)
	e.head = h
	e.out.Reset()
	e.gz.Reset(&e.out)
	// Writes to a bytes.Buffer do not fail.
	e.gz.Write(h)
	for _, part := range parts {
		e.gz.Write(part)
	}
	e.gz.Write(e.end)
	if err := e.gz.Close(); err != nil {
		return nil, err
	}
	return e.out.Bytes(), nil
}
