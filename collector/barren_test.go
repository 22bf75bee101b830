package collector

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestBarrenConnections: a host whose every connection fails before its
// first response — answering bytes that are not HTTP and then holding the
// connection — ends the list after two connections, as one that hangs up
// does. Each URL of a list of 20 cost a connection and a linger; the rest
// now come back unsent, with the last failure. (A silent one times out:
// stall_test.go.)
func TestBarrenConnections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(cs *rawConn, req *http.Request) bool
		kind   Kind
	}{
		{"garbage", func(cs *rawConn, req *http.Request) bool {
			cs.bw.WriteString("SSH-2.0-OpenSSH_9.2\r\n\r\n")
			cs.bw.Flush()
			cs.s.block()
			return false
		}, BadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRaw(t, tc.handle)
			c := rawCollector(t, Config{FirstByte: 200 * time.Millisecond, IdleRead: 200 * time.Millisecond,
				ResponseTimeout: time.Second, Linger: 100 * time.Millisecond})
			b := c.Fetch(context.Background(), rawList(s, 20))
			defer c.Release(b)
			if conns, _, _ := s.stats(); conns > 2 || b.Connections > 2 {
				t.Errorf("%d connections (the server saw %d) to a host that answers nothing, want 2", b.Connections, conns)
			}
			for i := range b.Results {
				r := &b.Results[i]
				if r.Kind != tc.kind || r.Err == nil {
					t.Errorf("%s: %s (%v), want %s", r.URL, r.Kind, r.Err, tc.kind)
				}
				if want := min(1, max(0, 2-i)); r.Attempts != want {
					t.Errorf("%s: sent %d times, want %d", r.URL, r.Attempts, want)
				}
			}
		})
	}
}
