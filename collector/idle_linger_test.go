package collector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestCancelDuringKeptLinger: a list that found its host's kept
// connection holding bytes nobody asked for closed it lingering (waiting
// up to Linger for the server's close) deaf to its own cancellation, as
// fetcher.close did (TestCancelDuringLinger): a server that kept its end
// open held the cancelled list for the whole Linger.
func TestCancelDuringKeptLinger(t *testing.T) {
	const linger = 20 * time.Second
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stray := make(chan struct{})     // the server may send its stray bytes
	lingering := make(chan struct{}) // the client half-closed
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
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		<-stray
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot asked")
		io.Copy(io.Discard, br) // until the client's half-close
		close(lingering)
		<-done // and never close
	}()
	c, err := New(Config{UserAgent: testUA, KeepIdle: time.Minute, Linger: linger,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://keep.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	b := c.Fetch(context.Background(), listOf([]string{base + "a"}))
	if r := &b.Results[0]; r.Kind != OK {
		t.Fatalf("%s: %s (%v)", r.URL, r.Kind, r.Err)
	}
	c.Release(b)
	c.kept.mu.Lock()
	ic := c.kept.conns["keep.test"]
	c.kept.mu.Unlock()
	if ic == nil {
		t.Fatal("no kept connection after a clean list")
	}
	close(stray)
	for i := 0; peek(ic.c.raw) != peekBytes; i++ { // the bytes in the socket
		if i == 10000 {
			t.Fatal("the stray bytes never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := make(chan time.Time, 1)
	go func() {
		<-lingering
		at <- time.Now()
		cancel()
	}()
	b = c.Fetch(ctx, listOf([]string{base + "b"}))
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
	if r := &b.Results[0]; r.Kind != NotTried || r.Attempts != 0 {
		t.Errorf("%s: %s (%v), %d attempts; want not-tried, unsent", r.URL, r.Kind, r.Err, r.Attempts)
	}
}
