package collector

import (
	"context"
	"net/http"
	"testing"
)

// TestInterimPerAttempt: the 1xx responses of a request's earlier attempt
// (a bad response after them, on a pipelined connection, sends it again)
// are not its final response's: they must neither show in Result.Interim
// nor count against MaxInterim on the next attempt.
func TestInterimPerAttempt(t *testing.T) {
	s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
		cs.bw.WriteString("HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n")
		if cs.id == 1 && cs.n == 2 {
			cs.bw.WriteString("not a response\r\n\r\n")
			return false
		}
		cs.ok(req)
		return true
	})
	c := rawCollector(t, Config{Pipeline: 4, MaxInterim: 2})
	b := c.Fetch(context.Background(), rawList(s, 3))
	defer c.Release(b)
	checkBodies(t, b)
	for i := range b.Results {
		if r := &b.Results[i]; r.Interim != 2 {
			t.Errorf("%s: %d interim responses after %d attempts, want 2", r.URL, r.Interim, r.Attempts)
		}
	}
	if r := &b.Results[1]; r.Attempts != 2 {
		t.Errorf("%s: %d attempts, want 2 (the first got a bad response after the pipelined one)", r.URL, r.Attempts)
	}
}
