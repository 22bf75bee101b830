package collector

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TestTLSUnsolicitedRecord: a TLS server that follows each response with
// one nobody asked for, in a TLS record of its own. The TLS layer hands
// over one record per read, so the second stayed there, unseen by the
// check for bytes nobody asked for, and became the next request's answer:
// every body moved onto the wrong URL, and a kept connection carried the
// stray response into the next list. Each body must be its own URL's.
func TestTLSUnsolicitedRecord(t *testing.T) {
	cert := selfSigned(t, "a.test")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert}}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer raw.Close()
				raw.SetDeadline(time.Now().Add(10 * time.Second))
				hc := &heldConn{Conn: raw}
				c := tls.Server(hc, srvTLS)
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b := bodyOf(req.URL.Path)
					// Two writes: two TLS records, sent at once.
					hc.held = []byte{}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot asked"))
					held := hc.held
					hc.held = nil
					if _, err := raw.Write(held); err != nil {
						return
					}
				}
			}()
		}
	}()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	c, err := New(Config{UserAgent: testUA, RootCAs: pool, ReconnectGap: 10 * time.Millisecond, Linger: 100 * time.Millisecond,
		FirstByte: 2 * time.Second, IdleRead: time.Second, ResponseTimeout: 5 * time.Second, KeepIdle: 5 * time.Second,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	port := ln.Addr().(*net.TCPAddr).Port
	for list := range 2 {
		l := &List{}
		for i := range 3 {
			l.Requests = append(l.Requests, Request{URL: fmt.Sprintf("https://a.test:%d/l%d-p%d", port, list, i)})
		}
		b := c.Fetch(context.Background(), l)
		checkBodies(t, b)
		c.Release(b)
	}
}

// heldConn holds what is written while held is not nil, for one send.
type heldConn struct {
	net.Conn
	held []byte
}

func (h *heldConn) Write(p []byte) (int, error) {
	if h.held != nil {
		h.held = append(h.held, p...)
		return len(p), nil
	}
	return h.Conn.Write(p)
}
