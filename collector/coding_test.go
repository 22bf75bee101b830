package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"testing"
)

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestContentEncodingLines: a Content-Encoding split over several header
// lines is one list (RFC 9110 5.3). Twice gzip (an application and a proxy
// each compressing) is refused, not decoded once into a compressed page
// that passes for the page; identity or empty lines beside one coding
// leave that coding, decoded. DecodeBody reads the list the same way.
func TestContentEncodingLines(t *testing.T) {
	cases := []struct {
		name  string
		lines string
		wire  func(p string) []byte
		want  Kind
	}{
		{"gzip twice", "Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", func(p string) []byte { return gzipOf(gzipOf([]byte(bodyOf(p)))) }, BadEncoding},
		{"gzip, gzip", "Content-Encoding: gzip, gzip\r\n", func(p string) []byte { return gzipOf(gzipOf([]byte(bodyOf(p)))) }, BadEncoding},
		{"identity then gzip", "Content-Encoding: identity\r\nContent-Encoding: gzip\r\n", func(p string) []byte { return gzipOf([]byte(bodyOf(p))) }, OK},
		{"empty then gzip", "Content-Encoding:\r\nContent-Encoding: gzip\r\n", func(p string) []byte { return gzipOf([]byte(bodyOf(p))) }, OK},
		{"gzip then identity", "Content-Encoding: gzip\r\nContent-Encoding: identity\r\n", func(p string) []byte { return gzipOf([]byte(bodyOf(p))) }, OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
				b := tc.wire(req.URL.Path)
				fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s", tc.lines, len(b), b)
				return true
			})
			c := rawCollector(t, Config{})
			b := c.Fetch(context.Background(), rawList(s, 2))
			defer c.Release(b)
			for i := range b.Results {
				r := &b.Results[i]
				if tc.want == OK {
					checkBodies(t, &Batch{Results: b.Results[i : i+1]})
					continue
				}
				if r.Kind != tc.want || !bytes.Equal(r.Body, r.WireBody) {
					t.Errorf("%s: %s (%v), body %.30q: want %s with the wire body", r.URL, r.Kind, r.Err, r.Body, tc.want)
				}
				if _, err := DecodeBody(r.ContentEncoding, r.WireBody, 1<<20); err == nil {
					t.Errorf("DecodeBody(%q) decoded a body coded twice", r.ContentEncoding)
				}
			}
		})
	}
	if got, err := DecodeBody("identity, gzip", gzipOf([]byte("page")), 1<<20); err != nil || string(got) != "page" {
		t.Errorf("DecodeBody(identity, gzip): %q, %v", got, err)
	}
	// A stored page's header (the node's re-expansion reads it back) gives
	// the same list as the fetch.
	h := http.Header{"Content-Encoding": {"gzip", "gzip"}}
	if got := ContentCoding(h); got != "gzip, gzip" {
		t.Errorf("ContentCoding(two lines) = %q", got)
	}
}
