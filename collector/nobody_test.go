package collector

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// TestNoBodyNoBuffer: the response to a HEAD, which has no body whatever
// its Content-Length says, took a body buffer sized from that length, up
// to the pool's largest class (1 MiB), which its result held empty until
// it was released: a HEAD list (kspider fetch -head) of large pages held
// a megabyte per URL. It takes the smallest now. (A 204 or a 304 is
// checked too: net/http gives them no length.)
func TestNoBodyNoBuffer(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		status := "200 OK"
		switch req.URL.Path {
		case "/p1":
			status = "304 Not Modified"
		case "/p2":
			status = "204 No Content"
		}
		fmt.Fprintf(cs.bw, "HTTP/1.1 %s\r\nContent-Length: 50000000\r\n\r\n", status)
		return true
	})
	c := rawCollector(t, Config{})
	l := rawList(s, 3)
	l.Requests[0].Head = true
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	for i := range b.Results {
		if r := &b.Results[i]; r.Kind != OK || len(r.WireBody) != 0 || i == 0 && r.ContentLength != 50000000 {
			t.Errorf("%s: %s (%v), %d body bytes, length %d", r.URL, r.Kind, r.Err, len(r.WireBody), r.ContentLength)
		}
	}
	// Heads only: a few hundred bytes each.
	if lent, _ := c.PoolLent(); lent > 3*4096 {
		t.Errorf("%d bytes lent for three responses without a body", lent)
	}
}
