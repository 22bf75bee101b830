package collector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cutResponse is the response the cut server sends for path p: each path
// framed its own way, so that a cut falls in every kind of framing.
func cutResponse(p string) string {
	b := bodyOf(p)
	switch p {
	case "/p2": // chunked, with an extension and a trailer
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-T: t\r\n\r\n", b[:5], len(b)-5, b[5:])
	case "/p3": // behind an interim response
		return fmt.Sprintf("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	case "/p4":
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	}
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
}

// cutExchange is the responses to /p1../p4, and where each ends in it.
func cutExchange() (all string, ends [5]int) {
	for i := 1; i <= 4; i++ {
		all += cutResponse("/p" + strconv.Itoa(i))
		ends[i] = len(all)
	}
	return all, ends
}

// cutServer answers /p0 on its first connection, then sends the first cut
// bytes of the responses to /p1../p4 (cutExchange) and closes: pipelined,
// once it has read the four requests; otherwise each response's part as
// its request comes. On later connections it answers every request whole.
// Its close comes after it read every request sent, so that it is a FIN,
// not a reset that could drop what the client had not read yet.
func cutServer(t *testing.T, cut int, pipelined bool) (addr string, hits func() map[string]int) {
	all, ends := cutExchange()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func(c net.Conn, first bool) {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					seen[req.URL.Path]++
					mu.Unlock()
					if !first || n == 0 {
						if _, err := c.Write([]byte(cutResponse(req.URL.Path))); err != nil {
							return
						}
						continue
					}
					lo, hi := ends[n-1], ends[n]
					if pipelined {
						if n < 4 {
							continue // the exchange goes out once all four are read
						}
						lo, hi = 0, ends[4]
					}
					if _, err := c.Write([]byte(all[lo:min(hi, cut)])); err != nil {
						return
					}
					if cut > hi {
						continue
					}
					c.(*net.TCPConn).CloseWrite()
					for {
						if _, err := br.ReadByte(); err != nil {
							return // the client closed too
						}
					}
				}
			}(c, first)
		}
	}()
	return ln.Addr().String(), func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		m := map[string]int{}
		for k, v := range seen {
			m[k] = v
		}
		return m
	}
}

// TestCutAtEveryByte: a server that ends an exchange of four responses
// (Content-Length, chunked with a trailer, one behind a 100 Continue),
// pipelined or one at a time, after each of its byte offsets in turn.
// Whatever the offset, the response it cut is that URL's failure with at
// most its own body, asked once; every other URL gets its own page, those
// not started asked again on a new connection; none gets another URL's
// body.
func TestCutAtEveryByte(t *testing.T) {
	for _, depth := range []int{1, 4} {
		t.Run("pipeline="+strconv.Itoa(depth), func(t *testing.T) { cutAtEveryByte(t, depth) })
	}
}

func cutAtEveryByte(t *testing.T, depth int) {
	all, bounds := cutExchange()
	c := rawCollector(t, Config{Pipeline: depth, ReconnectGap: time.Millisecond})
	for cut := 0; cut <= len(all); cut++ {
		addr, hits := cutServer(t, cut, depth > 1)
		l := &List{}
		for i := range 5 {
			l.Requests = append(l.Requests, Request{ID: uint64(i), URL: "http://" + addr + "/p" + strconv.Itoa(i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		b := c.Fetch(ctx, l)
		cancel()
		if b.Pipelined != (depth > 1) {
			t.Fatalf("cut at %d: pipelined %v", cut, b.Pipelined)
		}
		h := hits()
		for i := range b.Results {
			r := &b.Results[i]
			p := "/p" + strconv.Itoa(i)
			inside := i > 0 && bounds[i-1] < cut && cut < bounds[i]
			switch {
			case !strings.HasPrefix(bodyOf(p), string(r.Body)):
				t.Errorf("cut at %d: %s: body %q is not its own", cut, p, r.Body)
			case inside && (r.Kind == OK || h[p] != 1):
				t.Errorf("cut at %d: %s, cut in its response: %s (%v), asked %d times; want a failure, asked once", cut, p, r.Kind, r.Err, h[p])
			case !inside && (r.Kind != OK || string(r.Body) != bodyOf(p)):
				t.Errorf("cut at %d: %s: %s (%v), body %q; want its page", cut, p, r.Kind, r.Err, r.Body)
			}
		}
		c.Release(b)
	}
}

// TestResponsesByteByByte: the same exchange as TestCutAtEveryByte,
// whole, read a byte at a time (a pipe hands each write to one read):
// every head, chunk line, trailer and interim response split at every
// offset across reads. No result's Header changes once it is final.
func TestResponsesByteByByte(t *testing.T) {
	for _, depth := range []int{1, 4} {
		c := rawCollector(t, Config{Pipeline: depth})
		var all strings.Builder
		for i := range 5 {
			all.WriteString(cutResponse("/p" + strconv.Itoa(i)))
		}
		dials := 0
		c.dialRaw = func(ctx context.Context) (net.Conn, error) {
			dials++
			cl, sv := net.Pipe()
			go func() {
				defer sv.Close()
				go io.Copy(io.Discard, sv)
				sv.SetWriteDeadline(time.Now().Add(10 * time.Second))
				s := all.String()
				for i := range len(s) {
					if _, err := sv.Write([]byte{s[i]}); err != nil {
						return
					}
				}
			}()
			return cl, nil
		}
		l := &List{}
		for i := range 5 {
			l.Requests = append(l.Requests, Request{ID: uint64(i), URL: "http://a.test/p" + strconv.Itoa(i)})
		}
		// Each result's Header is its own (ReadResponse's) map, still
		// whole after the responses that follow it are parsed.
		heads := map[*Result]string{}
		l.Each = func(r *Result) { heads[r] = fmt.Sprint(r.Header) }
		b := c.Fetch(context.Background(), l)
		checkBodies(t, b)
		for i := range b.Results {
			if r := &b.Results[i]; fmt.Sprint(r.Header) != heads[r] {
				t.Errorf("pipeline=%d: %s: header %v, was %s in Each", depth, r.URL, r.Header, heads[r])
			}
		}
		if r := &b.Results[3]; r.Interim != 1 {
			t.Errorf("pipeline=%d: /p3: %d interim responses, want 1", depth, r.Interim)
		}
		if b.Pipelined != (depth > 1) {
			t.Errorf("pipeline=%d: pipelined %v", depth, b.Pipelined)
		}
		if dials != 1 || b.Connections != 1 {
			t.Errorf("pipeline=%d: %d connections, want 1", depth, b.Connections)
		}
		c.Release(b)
	}
}
