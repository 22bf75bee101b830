package collector

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLongRequestAfterSlowResponse: a request longer than the write
// buffer (8 KiB: a URL near the URL tree's 8 KiB limit, or a few
// pipelined ones) is flushed while it is written, before the round set
// its write deadline, so under the deadline of the round before: past
// (that round's response took longer than FirstByte, a slow body within
// ResponseTimeout), the write failed at once and the connection was
// given up, its requests sent again on a new one. Now each round's
// deadline is set before its requests are written.
func TestLongRequestAfterSlowResponse(t *testing.T) {
	const firstByte = 100 * time.Millisecond
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		if req.URL.Path != "/p0" {
			cs.ok(req)
			return true
		}
		b := bodyOf(req.URL.Path)
		fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(b))
		cs.bw.Flush()
		time.Sleep(3 * firstByte) // the body: slow, within IdleRead
		cs.bw.WriteString(b)
		return true
	})
	c := rawCollector(t, Config{FirstByte: firstByte, IdleRead: 2 * time.Second, ResponseTimeout: 5 * time.Second, Linger: time.Second})
	long := "/" + strings.Repeat("a", 9<<10)
	l := &List{Requests: []Request{{ID: 0, URL: s.url("/p0")}, {ID: 1, URL: s.url(long)}}}
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	checkBodies(t, b)
	if r := &b.Results[1]; b.Connections != 1 || r.Attempts != 1 {
		t.Errorf("%d connections, the long request sent %d times; want 1, 1", b.Connections, r.Attempts)
	}
}
