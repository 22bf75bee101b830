package collector

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestZstdCapPerResponse: a fetcher's zstd decoder is made once and kept,
// with the memory cap of the first body it decoded. A robots.txt first
// (capped at List.RobotsMaxBody, 512 KiB for a node) came back empty and
// too-large when its frame asked for a larger window, as a server
// compressing on the fly writes it (a node then read a file without
// rules: everything allowed), and every later zstd page over 512 KiB came
// back empty and truncated, though under MaxBody.
func TestZstdCapPerResponse(t *testing.T) {
	robotsTxt := []byte("User-agent: *\nDisallow: /private/\n")
	page := []byte(strings.Repeat("<p>a zstd page of 700 KB</p>\n", 25000))
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	// robots.txt as a streaming encoder writes it (a server compressing
	// on the fly, its size unknown): its frame asks for the encoder's
	// window, 2 MiB at zstd's default level. This encoder fits the window
	// to a short input, so the descriptor is set by hand (RFC 8878
	// §3.1.1.1.2: 2^(10+11)).
	var streamed bytes.Buffer
	w, err := zstd.NewWriter(&streamed, zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(robotsTxt)
	w.Close()
	if fhd := streamed.Bytes()[4]; fhd&0xe3 != 0 {
		t.Fatalf("frame header descriptor %#x: not a frame with a window descriptor next", fhd)
	}
	streamed.Bytes()[5] = 11 << 3
	bodies := map[string][]byte{"/robots.txt": streamed.Bytes(), "/page": enc.EncodeAll(page, nil)}
	enc.Close()
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		b := bodies[req.URL.Path]
		fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: %d\r\n\r\n", len(b))
		cs.bw.Write(b)
		return true
	})
	c := rawCollector(t, Config{Fetchers: 1})
	// A node's cap: robots.DefaultMaxSize+1.
	l := &List{Requests: []Request{{URL: s.url("/page")}}, Robots: true, RobotsMaxBody: 512<<10 + 1}
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	if r := b.Robots; r.Kind != OK || !bytes.Equal(r.Body, robotsTxt) {
		t.Errorf("robots.txt: %s (%v), %q", r.Kind, r.Err, r.Body)
	}
	// The same fetcher (there is one) decodes the page of the list, and
	// that of a list of its own.
	b2 := c.Fetch(context.Background(), &List{Requests: []Request{{URL: s.url("/page")}}})
	defer c.Release(b2)
	for _, r := range []*Result{&b.Results[0], &b2.Results[0]} {
		if r.Kind != OK || r.Truncated || !bytes.Equal(r.Body, page) {
			t.Errorf("%s: %s (%v), truncated %v, %d bytes decoded, want %d", r.URL, r.Kind, r.Err, r.Truncated, len(r.Body), len(page))
		}
	}
}
