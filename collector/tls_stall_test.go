package collector

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTLSHandshakeStall: a server that accepts the connection and never
// answers the ClientHello fails the handshake, as one whose certificate is
// wrong does: the list ends with a tls failure, the host's, which a
// crawler backs off from. Reported as a timeout with nothing sent, every
// URL looked untried and the host's list came back at once, for ever.
func TestTLSHandshakeStall(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() { close(done); ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go io.Copy(io.Discard, c)
				select {
				case <-done:
				case <-time.After(10 * time.Second):
				}
			}()
		}
	}()
	c, err := New(Config{UserAgent: testUA, TLSTimeout: 200 * time.Millisecond,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l := &List{}
	for _, p := range []string{"/a", "/b", "/c"} {
		l.Requests = append(l.Requests, Request{URL: "https://stall.test:" + strconv.Itoa(port) + p})
	}
	b := c.Fetch(context.Background(), l)
	defer c.Release(b)
	for i := range b.Results {
		r := &b.Results[i]
		if r.Kind != TLS || r.Attempts != 0 || r.Err == nil || !strings.Contains(r.Err.Error(), "tls") {
			t.Errorf("%s: %s (%v) after %d attempts, want tls after none", r.URL, r.Kind, r.Err, r.Attempts)
		}
	}
}
