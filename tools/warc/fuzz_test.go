package warc

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
)

// FuzzHTTPHead feeds arbitrary stored header blocks to the response writer:
// whatever it drops, it writes a head that an HTTP parser reads back with the
// body's length and no transfer coding.
func FuzzHTTPHead(f *testing.F) {
	for _, p := range testPages() {
		f.Add(p.Header, len(p.Body))
	}
	f.Add([]byte("A: b\r\n\r\nC: d\r\n"), 3)
	f.Add([]byte("Transfer-Encoding: chunked\r\nContent-Length: 3\r\nContent-Length: 3\r\n"), 3)
	f.Add([]byte("Content-Length: +3\r\n"), 3)
	f.Add([]byte("Content-Length: 03\r\n"), 3)
	f.Fuzz(func(t *testing.T, header []byte, bodyLen int) {
		if bodyLen < 0 || bodyLen > 1<<16 {
			return
		}
		head, _ := appendHTTPHead(nil, 200, header, bodyLen)
		block := append(head, bytes.Repeat([]byte("x"), bodyLen)...)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(block)), nil)
		if err != nil {
			t.Fatalf("head for %q does not parse: %v\n%s", header, err, head)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || len(body) != bodyLen || resp.ContentLength != int64(bodyLen) || len(resp.TransferEncoding) != 0 {
			t.Fatalf("head for %q: body %d bytes (%v), Content-Length %d, TE %v; want %d\n%s",
				header, len(body), err, resp.ContentLength, resp.TransferEncoding, bodyLen, head)
		}
	})
}

// FuzzReader checks the reader fails cleanly on any input.
func FuzzReader(f *testing.F) {
	data, _ := writeTestWARC(f, testPages())
	f.Add(data)
	f.Add([]byte("WARC/1.1\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n"))
	f.Add([]byte("WARC/1.1\r\nContent-Length: 99999999999\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for range 100 {
			if _, err := r.Next(); err != nil {
				return
			}
		}
	})
}
