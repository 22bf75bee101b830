package collector

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// FuzzResponses feeds arbitrary server bytes to a list of three requests,
// with pipelining off or on: every connection the fetcher opens answers
// with the same bytes and closes. Whatever the bytes, Fetch must end within
// its bounds, with a classified result per URL and no body over the cap.
// With depth&8 the list asks for robots.txt first (RobotsMaxBody 100) and
// AfterRobots skips the second URL: it must be called once, before any
// other request is answered, and the skipped URL never sent.
func FuzzResponses(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: y\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nclose-delimited body",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 23\r\n\r\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\xcbH\xcd\xc9\xc9\x07\x00\x86\xa6\x106\x05\x00\x00\x00",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
		"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(3))
		f.Add([]byte(s), uint8(9))
		f.Add([]byte(s), uint8(11))
	}
	f.Fuzz(func(t *testing.T, server []byte, depth uint8) {
		c, err := New(Config{UserAgent: testUA, Pipeline: 1 + int(depth%4), MaxBody: 1 << 16, MaxHeader: 4 << 10,
			Lookup:    func(context.Context, string) ([]netip.Addr, error) { return nil, nil },
			FirstByte: 200 * time.Millisecond, IdleRead: 200 * time.Millisecond, ResponseTimeout: time.Second,
			Linger: 10 * time.Millisecond, ReconnectGap: time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		c.dialRaw = func(ctx context.Context) (net.Conn, error) {
			cl, sv := net.Pipe()
			go func() {
				defer sv.Close()
				go io.Copy(io.Discard, sv)
				sv.SetWriteDeadline(time.Now().Add(2 * time.Second))
				sv.Write(server)
			}()
			return cl, nil
		}
		l := &List{Requests: []Request{{ID: 1, URL: "http://a.test/1"}, {ID: 2, URL: "http://a.test/2", Head: true}, {ID: 3, URL: "http://a.test/3"}}}
		calls, early := 0, 0
		if depth&8 != 0 {
			l.Robots, l.RobotsMaxBody = true, 100
			l.AfterRobots = func(r *Result) []bool {
				calls++
				if len(r.Body) > 100 || len(r.WireBody) > 100 {
					t.Errorf("robots.txt body %d, wire %d bytes over its cap", len(r.Body), len(r.WireBody))
				}
				return []bool{false, true}
			}
			l.Each = func(r *Result) {
				if r.ID != 0 && r.Attempts > 0 && calls == 0 {
					early++
				}
			}
		}
		start := time.Now()
		b := c.Fetch(context.Background(), l)
		defer c.Release(b)
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("took %v", d)
		}
		if depth&8 != 0 {
			if calls != 1 || early > 0 || b.Results[1].Kind != Skipped || b.Results[1].Attempts != 0 {
				t.Fatalf("AfterRobots called %d times, %d requests answered before it; second URL %s after %d attempts",
					calls, early, b.Results[1].Kind, b.Results[1].Attempts)
			}
		}
		for i := range b.Results {
			r := &b.Results[i]
			if r.ID != uint64(i+1) {
				t.Fatalf("result %d has id %d", i, r.ID)
			}
			if r.Kind == OK && (r.Status < 200 || r.Status > 599 || len(r.Head) == 0) {
				t.Fatalf("%s: ok with status %d head %q", r.URL, r.Status, r.Head)
			}
			if len(r.Body) > 1<<16 || len(r.WireBody) > 1<<16 || len(r.Head) > 4<<10 {
				t.Fatalf("%s: body %d, wire body %d, head %d bytes over the caps", r.URL, len(r.Body), len(r.WireBody), len(r.Head))
			}
			if r.Status != 0 && !bytes.Contains(server, r.Head) {
				t.Fatalf("%s: head %q is not what the server sent", r.URL, r.Head)
			}
		}
	})
}
