package collector

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestUnsolicitedAfterLongBody: a response nobody asked for, sent in the
// same write as a body of 4 KiB or more. Such a body is read straight into
// its buffer up to its Content-Length, so the stray response stayed in the
// socket, unseen by the check of the buffered reader, and became the next
// request's answer: every body moved onto the wrong URL. Each body must be
// its own URL's.
func TestUnsolicitedAfterLongBody(t *testing.T) {
	pad := strings.Repeat(".", 10000)
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		b := bodyOf(req.URL.Path) + pad
		// One write, larger than the server's buffer: one send.
		cs.bw.Write([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b) +
			"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot asked"))
		return true
	})
	c := rawCollector(t, Config{})
	b := c.Fetch(context.Background(), rawList(s, 4))
	defer c.Release(b)
	for i := range b.Results {
		r := &b.Results[i]
		p := r.URL[strings.LastIndexByte(r.URL, '/'):]
		if r.Kind != OK || string(r.Body) != bodyOf(p)+pad {
			t.Errorf("%s: kind %s (%v), body %.30q", r.URL, r.Kind, r.Err, r.Body)
		}
	}
}
