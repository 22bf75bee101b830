package collector

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestCancelDuringLinger: a list cancelled while it drained a connection
// it had given up on (half-closed, waiting up to Linger for the server's
// close) went on waiting the whole Linger, for a server that never
// closed: the cancellation, which README says cuts a list short within
// milliseconds, came up to Linger (2 s) late, at a node's stop as at a
// slot's end. The drain now ends with the list's context.
func TestCancelDuringLinger(t *testing.T) {
	const linger = 20 * time.Second
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	lingering := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n\r\n")) // not HTTP: given up on
		io.Copy(io.Discard, br)                        // until the client's half-close
		close(lingering)
		<-done // and never close
	}()
	c := rawCollector(t, Config{Linger: linger, FirstByte: 2 * time.Second, IdleRead: time.Second, ResponseTimeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := make(chan time.Time, 1)
	go func() {
		<-lingering
		at <- time.Now()
		cancel()
	}()
	l := &List{Requests: []Request{{URL: "http://" + ln.Addr().String() + "/p0"}, {URL: "http://" + ln.Addr().String() + "/p1"}}}
	b := c.Fetch(ctx, l)
	defer c.Release(b)
	var cancelled time.Time
	select {
	case cancelled = <-at:
	default:
		t.Fatalf("the list ended before it lingered: %s (%v)", b.Results[0].Kind, b.Results[0].Err)
	}
	// Not a speed check: anything near Linger is the drain's full wait.
	if d := time.Since(cancelled); d > linger/2 {
		t.Errorf("Fetch returned %v after its cancellation, lingering (Linger %v)", d, linger)
	}
	if r := &b.Results[1]; r.Kind != NotTried {
		t.Errorf("%s: %s (%v), want not-tried", r.URL, r.Kind, r.Err)
	}
}
