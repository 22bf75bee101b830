package collector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer is a test server on a raw socket that misbehaves on purpose.
// Each connection reads requests with http.ReadRequest and hands them to
// handle, which writes whatever bytes it likes and says whether to go on.
type rawServer struct {
	ln     net.Listener
	handle func(cs *rawConn, req *http.Request) bool
	wg     sync.WaitGroup
	done   chan struct{} // closed when the test ends

	mu      sync.Mutex
	conns   int
	open    int
	maxOpen int
	hits    map[string]int
}

type rawConn struct {
	id int // 1-based connection number
	n  int // requests read on this connection, this one included
	bw *bufio.Writer
	br *bufio.Reader
	s  *rawServer
}

func startRaw(t *testing.T, handle func(cs *rawConn, req *http.Request) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, handle: handle, hits: map[string]int{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { close(s.done); ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		s.open++
		s.maxOpen = max(s.maxOpen, s.open)
		cs := &rawConn{id: s.conns, bw: bufio.NewWriter(c), br: bufio.NewReader(c), s: s}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				c.Close()
				s.mu.Lock()
				s.open--
				s.mu.Unlock()
			}()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			for {
				req, err := http.ReadRequest(cs.br)
				if err != nil {
					return
				}
				cs.n++
				s.mu.Lock()
				s.hits[req.URL.Path]++
				s.mu.Unlock()
				goOn := s.handle(cs, req)
				if cs.bw.Flush() != nil || !goOn {
					return
				}
			}
		}()
	}
}

func (s *rawServer) url(p string) string { return "http://" + s.ln.Addr().String() + p }

func (s *rawServer) stats() (conns, maxOpen int, hits map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := map[string]int{}
	for k, v := range s.hits {
		h[k] = v
	}
	return s.conns, s.maxOpen, h
}

// bodyOf is the body the raw server sends for a path: it names the path, so
// a body given to the wrong URL shows.
func bodyOf(p string) string { return "the body of " + p + strings.Repeat(".", len(p)*7) }

// ok writes a correct keep-alive response for req.
func (cs *rawConn) ok(req *http.Request) {
	b := bodyOf(req.URL.Path)
	fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", len(b))
	if req.Method != http.MethodHead {
		cs.bw.WriteString(b)
	}
}

func rawCollector(t *testing.T, cfg Config) *Collector {
	t.Helper()
	cfg.UserAgent = testUA
	cfg.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return nil, errors.New("raw tests use IP literals")
	}
	if cfg.ReconnectGap == 0 {
		cfg.ReconnectGap = 20 * time.Millisecond
	}
	if cfg.FirstByte == 0 {
		cfg.FirstByte = 2 * time.Second
		cfg.IdleRead = time.Second
		cfg.ResponseTimeout = 5 * time.Second
		cfg.Linger = time.Second
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rawList(s *rawServer, n int) *List {
	l := &List{}
	for i := range n {
		l.Requests = append(l.Requests, Request{ID: uint64(i), URL: s.url("/p" + strconv.Itoa(i))})
	}
	return l
}

// checkBodies fails for any result with a body other than its own URL's;
// results whose index is in skip are not checked.
func checkBodies(t *testing.T, b *Batch, skip ...int) {
	t.Helper()
	for i := range b.Results {
		r := &b.Results[i]
		if slices.Contains(skip, i) {
			continue
		}
		p := r.URL[strings.LastIndexByte(r.URL, '/'):]
		if r.Kind != OK || r.Status != 200 || string(r.Body) != bodyOf(p) {
			t.Errorf("%s: kind %s (%v), status %d, body %.40q", r.URL, r.Kind, r.Err, r.Status, r.Body)
		}
	}
}

// TestMisbehavingServer runs the collector against a raw-socket server that
// misbehaves around keep-alive and pipelining, with pipelining off and on.
func TestMisbehavingServer(t *testing.T) {
	for _, depth := range []int{1, 4} {
		t.Run(fmt.Sprintf("pipeline=%d", depth), func(t *testing.T) { misbehave(t, depth) })
	}
}

func misbehave(t *testing.T, depth int) {
	const n = 12
	run := func(t *testing.T, handle func(cs *rawConn, req *http.Request) bool) (*rawServer, *Batch) {
		s := startRaw(t, handle)
		c := rawCollector(t, Config{Pipeline: depth})
		b := c.Fetch(context.Background(), rawList(s, n))
		t.Cleanup(func() { c.Release(b) })
		if _, maxOpen, _ := s.stats(); maxOpen > 1 {
			t.Errorf("%d connections open at once", maxOpen)
		}
		return s, b
	}

	t.Run("fewer answers then close", func(t *testing.T) {
		s, b := run(t, func(cs *rawConn, req *http.Request) bool {
			if cs.n == 4 {
				return false // hang up without answering the 4th (and what follows)
			}
			cs.ok(req)
			return true
		})
		checkBodies(t, b)
		conns, _, hits := s.stats()
		t.Logf("%d connections, hits %v", conns, hits)
		if depth > 1 && !b.NoPipeline {
			t.Errorf("host not on the no-pipelining list")
		}
	})
	t.Run("close mid-body", func(t *testing.T) {
		s, b := run(t, func(cs *rawConn, req *http.Request) bool {
			if req.URL.Path == "/p5" {
				fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nthe body of /p5, cut")
				return false
			}
			cs.ok(req)
			return true
		})
		checkBodies(t, b, 5)
		r := &b.Results[5]
		if r.Kind != Reset || !r.Short || r.Status != 200 || string(r.Body) != "the body of /p5, cut" {
			t.Errorf("cut body: kind %s short %v status %d body %q", r.Kind, r.Short, r.Status, r.Body)
		}
		// A response that started is not asked again, unless the client
		// never saw it: a server that closes with pipelined requests
		// unread sends a reset, which may discard what it sent before.
		if _, _, hits := s.stats(); hits["/p5"] != 1 && (depth == 1 || hits["/p5"] > 3) {
			t.Errorf("/p5 fetched %d times: a response that started must not be asked again", hits["/p5"])
		}
	})
	t.Run("unsolicited response", func(t *testing.T) {
		_, b := run(t, func(cs *rawConn, req *http.Request) bool {
			cs.ok(req)
			if req.URL.Path == "/p2" {
				cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot asked")
			}
			return true
		})
		if depth == 1 {
			checkBodies(t, b)
		} else {
			// Pipelined behind /p2, the extra response is framed like a real
			// one: HTTP/1.1 cannot tell which URL it was for. It can only
			// land on a request sent before it arrived, and the list must
			// still finish, with the host off pipelining.
			for i := range b.Results {
				if r := &b.Results[i]; r.Kind != OK && r.Kind != NotTried {
					t.Errorf("%s: %s %v", r.URL, r.Kind, r.Err)
				}
			}
		}
		for i := range b.Results {
			if r := &b.Results[i]; depth == 1 && string(r.Body) == "not asked" {
				t.Errorf("%s got the unsolicited body", r.URL)
			}
		}
	})
	t.Run("long heads", func(t *testing.T) {
		// Heads longer than the small reader (4 KiB), under the cap.
		pad := strings.Repeat("p", 20<<10)
		_, b := run(t, func(cs *rawConn, req *http.Request) bool {
			body := bodyOf(req.URL.Path)
			fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n%s", pad[:len(pad)-len(body)], len(body), body)
			return true
		})
		checkBodies(t, b)
		for i := range b.Results {
			if r := &b.Results[i]; !strings.HasSuffix(string(r.Head), "\r\n\r\n") || len(r.Head) < 20<<10 {
				t.Errorf("%s: head of %d bytes", r.URL, len(r.Head))
			}
		}
	})
	t.Run("1xx before the final response", func(t *testing.T) {
		_, b := run(t, func(cs *rawConn, req *http.Request) bool {
			cs.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
			cs.ok(req)
			return true
		})
		checkBodies(t, b)
		for i := range b.Results {
			if r := &b.Results[i]; r.Interim != 2 || !strings.HasPrefix(string(r.Head), "HTTP/1.1 200 OK\r\n") {
				t.Errorf("%s: %d interim, head %q", r.URL, r.Interim, r.Head)
			}
		}
	})
	for _, tc := range []struct {
		name, head string
		kind       Kind
	}{
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!", BadResponse},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", BadResponse},
		{"garbage", "SSH-2.0-OpenSSH_9.2\r\n\r\n", BadResponse},
		{"huge chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nabc", BadResponse},
		{"huge header", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", 3<<20) + "\r\n\r\n", TooLarge},
		{"many headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: b\r\n", 20000) + "\r\n", TooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, b := run(t, func(cs *rawConn, req *http.Request) bool {
				if req.URL.Path == "/p3" {
					cs.bw.WriteString(tc.head)
					return true // keep reading: the client must stop trusting the connection
				}
				cs.ok(req)
				return true
			})
			checkBodies(t, b, 3)
			if r := &b.Results[3]; r.Kind != tc.kind {
				t.Errorf("/p3: kind %s (%v), want %s", r.Kind, r.Err, tc.kind)
			}
			conns, _, hits := s.stats()
			if conns < 2 || hits["/p3"] > 3 {
				t.Errorf("%d connections, /p3 asked %d times", conns, hits["/p3"])
			}
		})
	}
	t.Run("chunked with a Content-Length", func(t *testing.T) {
		s, b := run(t, func(cs *rawConn, req *http.Request) bool {
			if req.URL.Path == "/p3" {
				b := bodyOf("/p3")
				fmt.Fprintf(cs.bw, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(b), b)
				return true
			}
			cs.ok(req)
			return true
		})
		checkBodies(t, b)
		if conns, _, _ := s.stats(); conns < 2 {
			t.Errorf("the connection was reused after chunked + Content-Length")
		}
	})
	t.Run("HTTP/1.0 with Transfer-Encoding", func(t *testing.T) {
		// RFC 9112 §6.1: its framing is faulty, and the connection closes
		// after it; kept, what follows its Content-Length (here a response
		// sent late, so that it is not yet held when /p3 ends) was taken
		// for /p4's.
		_, b := run(t, func(cs *rawConn, req *http.Request) bool {
			if req.URL.Path == "/p3" {
				const chunks = "5\r\nhello\r\n0\r\n\r\n"
				fmt.Fprintf(cs.bw, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n%s", len(chunks), chunks)
				cs.bw.Flush()
				time.Sleep(100 * time.Millisecond)
				cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled!")
				return true
			}
			cs.ok(req)
			return true
		})
		checkBodies(t, b, 3)
	})
	t.Run("nothing but hang-ups", func(t *testing.T) {
		s, b := run(t, func(cs *rawConn, req *http.Request) bool { return false })
		for i := range b.Results {
			if r := &b.Results[i]; r.Kind != Reset {
				t.Errorf("%s: %s, want reset", r.URL, r.Kind)
			}
		}
		if conns, _, _ := s.stats(); conns > 2 {
			t.Errorf("%d connections to a server that answers nothing", conns)
		}
	})
	t.Run("endless close-delimited body", func(t *testing.T) {
		s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
			cs.bw.WriteString("HTTP/1.0 200 OK\r\n\r\n")
			for range 64 {
				cs.bw.WriteString(strings.Repeat("z", 64<<10))
			}
			return false
		})
		c := rawCollector(t, Config{Pipeline: depth, MaxBody: 1 << 20})
		b := c.Fetch(context.Background(), rawList(s, 2))
		defer c.Release(b)
		for i := range b.Results {
			if r := &b.Results[i]; r.Kind != TooLarge || !r.Truncated || len(r.Body) != 1<<20 {
				t.Errorf("%s: %s truncated %v, %d bytes", r.URL, r.Kind, r.Truncated, len(r.Body))
			}
		}
	})
	t.Run("stall", func(t *testing.T) {
		s := startRaw(t, func(cs *rawConn, req *http.Request) bool {
			if req.URL.Path == "/p1" {
				cs.bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome")
				cs.bw.Flush()
				cs.s.block()
				return false
			}
			cs.ok(req)
			return true
		})
		c := rawCollector(t, Config{Pipeline: depth, FirstByte: time.Second, IdleRead: 100 * time.Millisecond, ResponseTimeout: time.Second, Linger: 50 * time.Millisecond})
		start := time.Now()
		b := c.Fetch(context.Background(), rawList(s, 3))
		defer c.Release(b)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v", d)
		}
		checkBodies(t, b, 1, 2)
		if r := &b.Results[1]; r.Kind != Timeout || !r.Short || string(r.Body) != "some" {
			t.Errorf("stalled: %s short %v body %q", r.Kind, r.Short, r.Body)
		}
		// The timeout ended the list: /p2 unsent, or pipelined behind /p1.
		if r := &b.Results[2]; r.Status != 0 || r.Attempts != min(depth-1, 1) || r.Err == nil {
			t.Errorf("after the stall: %s (%v), status %d after %d attempts, want no response", r.Kind, r.Err, r.Status, r.Attempts)
		}
	})
}

// block holds a handler until the test ends (at most 10 s).
func (s *rawServer) block() {
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

func (s *rawServer) hitsOf(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[p]
}
