// Package warc writes stored pages as a WARC/1.1 file (ISO 28500:2017), the
// format web archives exchange, and reads such files back.
//
// A file written here is a sequence of gzip members, one per record, so that
// archive tools can seek to any record by offset:
//
//	warcinfo   one record describing the file (software, format)
//	response   one record per stored page
//
// Every record is
//
//	WARC/1.1 CRLF
//	named fields, "Name: value" CRLF each
//	CRLF
//	block (Content-Length bytes)
//	CRLF CRLF
//
// A response record's block is an HTTP/1.1 response: status line, the
// header lines as the crawler received them, a blank line and the body.
// Storage keeps bodies decoded of any transfer encoding (chunked), so the
// block could not honour the original Transfer-Encoding or a Content-Length
// that no longer matches: those headers are renamed to
// X-Crawler-Transfer-Encoding and X-Crawler-Content-Length (the original
// value is kept, as wget, Heritrix and warcprox keep theirs under a prefix),
// and a Content-Length giving the written body's length is added. A
// Content-Length that already matches stays as it is. Content-Encoding is
// kept: the stored body is still content-encoded (e.g. gzip) as received.
//
// WARC-Target-URI is the stored URL, its bytes that are not UTF-8 (if any)
// percent-encoded, so the field is a URI or a UTF-8 IRI.
//
// WARC-Payload-Digest and WARC-Block-Digest are "sha1:" and the base32
// (RFC 4648) SHA-1 of the body and of the whole block, as Heritrix and
// warcio write them. Record ids of response records are name-based UUIDs
// (SHA-1, RFC 9562 version 5) of the URL id, URL and fetch time, so
// exporting the same store twice gives the same ids; the warcinfo record's id
// is random.
package warc

import (
	"bufio"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kspider/kspider/storage"
)

// Version is the WARC version line every record starts with.
const Version = "WARC/1.1"

// Record types this package writes.
const (
	TypeWarcinfo = "warcinfo"
	TypeResponse = "response"
)

// ContentTypeHTTPResponse is the Content-Type of a response record's block.
const ContentTypeHTTPResponse = "application/http; msgtype=response"

// Field is one named field of a record header. A record's fields keep the
// order they were written in.
type Field struct {
	Name, Value string
}

// Writer writes records to an underlying writer, each as its own gzip member.
// It is not safe for concurrent use; to compress on several goroutines, give
// each an Encoder and write their members with WriteMember.
type Writer struct {
	w     *bufio.Writer
	enc   *Encoder
	count int   // records written
	err   error // first write error; the file is unusable after it
}

// NewWriter returns a Writer on w. Call Flush when done.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), enc: NewEncoder()}
}

// Count returns how many records have been written.
func (w *Writer) Count() int { return w.count }

// WriteRecord writes one record: the version line, fields (which must not
// contain Content-Length: it is computed from block) and block. Field names
// and values must be free of CR, LF and (for names) colons.
func (w *Writer) WriteRecord(fields []Field, block []byte) error {
	member, err := w.enc.Record(fields, block)
	if err != nil {
		return err
	}
	return w.WriteMember(member)
}

// WriteResponse writes page p as a response record; see Encoder.Response.
// A *PageError leaves the file as it was and the writer usable; any other
// error is a write failure after which the file is unusable.
func (w *Writer) WriteResponse(p *storage.Page, warcinfoID string) (dropped []string, err error) {
	member, dropped, err := w.enc.Response(p, warcinfoID)
	if err != nil {
		return nil, err
	}
	return dropped, w.WriteMember(member)
}

// WriteMember writes a record an Encoder made.
func (w *Writer) WriteMember(member []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(member); err != nil {
		w.err = err
		return err
	}
	w.count++
	return nil
}

// Flush writes buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

func checkField(f Field) error {
	if f.Name == "" || strings.ContainsAny(f.Name, ":\r\n \t") {
		return fmt.Errorf("warc: bad field name %q", f.Name)
	}
	if strings.ContainsAny(f.Value, "\r\n") {
		return fmt.Errorf("warc: field %s: value contains a line break: %q", f.Name, f.Value)
	}
	if strings.EqualFold(f.Name, "Content-Length") {
		return errors.New("warc: Content-Length is computed by the writer, not given")
	}
	return nil
}

// WriteInfo writes a warcinfo record for the file named filename (its base
// name, as WARC-Filename) dated date, with the given info fields (e.g.
// software, format) as its application/warc-fields block. It returns the
// record's id, for the WARC-Warcinfo-ID of the records that follow.
func (w *Writer) WriteInfo(filename string, date time.Time, info []Field) (id string, err error) {
	id, err = RandomRecordID()
	if err != nil {
		return "", err
	}
	var block strings.Builder
	for _, f := range info {
		if err := checkField(f); err != nil {
			return "", err
		}
		block.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	fields := []Field{
		{"WARC-Type", TypeWarcinfo},
		{"WARC-Record-ID", id},
		{"WARC-Date", FormatDate(date)},
	}
	if filename != "" {
		fields = append(fields, Field{"WARC-Filename", filename})
	}
	fields = append(fields, Field{"Content-Type", "application/warc-fields"})
	return id, w.WriteRecord(fields, []byte(block.String()))
}

// FormatDate formats t as a WARC-Date: RFC 3339 in UTC, to the second (the
// precision WARC/1.0 readers and 14-digit CDX timestamps expect).
func FormatDate(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// SHA1Digest returns "sha1:" and the base32 SHA-1 of b, the form of
// WARC-Payload-Digest and WARC-Block-Digest.
func SHA1Digest(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}
