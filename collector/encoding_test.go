package collector

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestEncodings checks gzip, zlib and raw deflate bodies are decoded with
// the wire bytes kept, an unknown or corrupt coding is bad-encoding with
// the wire body as the body, and requests carry only the operator's
// identification and Accept-Encoding.
func TestEncodings(t *testing.T) {
	page := []byte(strings.Repeat("<p>decoded page</p>\n", 500))
	encode := func(kind string) []byte {
		var b bytes.Buffer
		switch kind {
		case "gzip":
			w := gzip.NewWriter(&b)
			w.Write(page)
			w.Close()
		case "zlib":
			w := zlib.NewWriter(&b)
			w.Write(page)
			w.Close()
		case "raw":
			w, _ := flate.NewWriter(&b, flate.BestSpeed)
			w.Write(page)
			w.Close()
		case "zstd":
			w, _ := zstd.NewWriter(&b)
			w.Write(page)
			w.Close()
		case "zstd-bomb":
			w, _ := zstd.NewWriter(&b)
			w.Write(make([]byte, 32<<20))
			w.Close()
		case "corrupt":
			w := gzip.NewWriter(&b)
			w.Write(page)
			w.Close()
			b.Bytes()[len(b.Bytes())/2] ^= 0xff
		default:
			b.Write(page)
		}
		return b.Bytes()
	}
	cases := map[string]struct{ kind, header string }{
		"/gzip": {"gzip", "gzip"}, "/xgzip": {"gzip", "x-gzip"}, "/zlib": {"zlib", "deflate"}, "/raw": {"raw", "deflate"},
		"/zstd": {"zstd", "zstd"}, "/zstd-bomb": {"zstd-bomb", "zstd"}, "/br": {"plain", "br"}, "/corrupt": {"corrupt", "gzip"}, "/plain": {"plain", ""},
	}
	// Encode every body before the server starts: compressing the 32 MiB
	// bomb under -race on a loaded machine takes longer than the
	// collector's first-byte timeout.
	bodies := map[string][]byte{}
	for _, tc := range cases {
		if _, ok := bodies[tc.kind]; !ok {
			bodies[tc.kind] = encode(tc.kind)
		}
	}
	var mu sync.Mutex
	var headers []http.Header
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		mu.Lock()
		headers = append(headers, req.Header)
		mu.Unlock()
		tc := cases[req.URL.Path]
		body := bodies[tc.kind]
		fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\n")
		if tc.header != "" {
			fmt.Fprintf(cs.bw, "Content-Encoding: %s\r\n", tc.header)
		}
		fmt.Fprintf(cs.bw, "Content-Length: %d\r\n\r\n", len(body))
		cs.bw.Write(body)
		return true
	})
	c := rawCollector(t, Config{From: "crawler@example.org", MaxBody: 1 << 20})
	var l List
	paths := []string{"/gzip", "/xgzip", "/zlib", "/raw", "/zstd", "/zstd-bomb", "/br", "/corrupt", "/plain"}
	for i, p := range paths {
		l.Requests = append(l.Requests, Request{ID: uint64(i), URL: s.url(p)})
	}
	b := c.Fetch(context.Background(), &l)
	defer c.Release(b)
	for i, p := range paths {
		r := &b.Results[i]
		tc := cases[p]
		wantKind := OK
		switch p {
		case "/br", "/corrupt":
			wantKind = BadEncoding
		case "/zstd-bomb":
			wantKind = TooLarge
			if !r.Truncated || len(r.Body) > 1<<20 {
				t.Errorf("zstd bomb: truncated %v, %d bytes", r.Truncated, len(r.Body))
			}
		}
		if r.Kind != wantKind || r.Status != 200 || !bytes.Equal(r.WireBody, bodies[tc.kind]) && p != "/corrupt" {
			t.Errorf("%s: %s (%v), %d wire bytes", p, r.Kind, r.Err, len(r.WireBody))
		}
		if wantKind == OK && !bytes.Equal(r.Body, page) || p == "/zstd-bomb" && bytes.ContainsFunc(r.Body, func(r rune) bool { return r != 0 }) {
			t.Errorf("%s: decoded %d bytes, want %d", p, len(r.Body), len(page))
		}
		if p == "/br" && !bytes.Equal(r.Body, r.WireBody) {
			t.Errorf("/br: body is not the wire body")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range headers {
		if len(h) != 3 || h.Get("User-Agent") != testUA || h.Get("From") != "crawler@example.org" || h.Get("Accept-Encoding") != acceptEncoding {
			t.Errorf("request headers %v", h)
		}
	}
}

// TestDecodeBody: a stored body decodes as a fetch decodes it, zlib or raw
// deflate alike, cut at max.
func TestDecodeBody(t *testing.T) {
	var gz, zl, fl bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("<a href=x>"))
	w.Close()
	zw := zlib.NewWriter(&zl)
	zw.Write([]byte("<a href=z>"))
	zw.Close()
	fw, _ := flate.NewWriter(&fl, flate.BestSpeed)
	fw.Write([]byte("<a href=f>"))
	fw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll([]byte("<a href=s>"), nil)
	enc.Close()
	for _, c := range []struct {
		coding string
		in     []byte
		want   string
		err    bool
	}{
		{"", []byte("plain"), "plain", false},
		{"GZIP", gz.Bytes(), "<a href=x>", false},
		{"gzip", []byte("not gzip"), "", true},
		{"br", []byte("x"), "", true},
		{"deflate", zl.Bytes(), "<a href=z>", false},
		{"deflate", fl.Bytes(), "<a href=f>", false},
		{"zstd", zs, "<a href=s>", false},
	} {
		got, err := DecodeBody(c.coding, c.in, 1<<20)
		if (err != nil) != c.err || string(got) != c.want {
			t.Errorf("DecodeBody(%q): %q, %v", c.coding, got, err)
		}
	}
	if got, err := DecodeBody("gzip", gz.Bytes(), 4); err != nil || string(got) != "<a h" {
		t.Errorf("DecodeBody cut at 4 bytes: %q, %v", got, err)
	}
}
