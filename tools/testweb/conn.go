package testweb

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The test web speaks HTTP/1.1 itself rather than through net/http: hostile
// hosts need control net/http does not give (wrong lengths, stalls, dropped
// pipelined requests), and the log needs connection ids.

// request is what the server keeps of a request's head.
type request struct {
	method, target string
	http10         bool
	host, ua       string
	close          bool  // the client asked to close after this response
	keepAlive10    bool  // HTTP/1.0 with Connection: keep-alive
	contentLength  int64 // request body to discard
	chunked        bool
}

var errBadRequest = errors.New("malformed request")

const maxHeaderLines = 100

// readRequest reads a request head. It returns io.EOF when the connection
// ends cleanly between requests.
func readRequest(br *bufio.Reader, req *request) error {
	*req = request{}
	line, err := br.ReadSlice('\n')
	// Tolerate empty lines before a request (RFC 9112, 2.2).
	for k := 0; err == nil && k < 4 && len(bytes.TrimRight(line, "\r\n")) == 0; k++ {
		line, err = br.ReadSlice('\n')
	}
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return errBadRequest
		}
		if len(line) == 0 {
			return io.EOF
		}
		return err
	}
	f := strings.Fields(string(line))
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
		return errBadRequest
	}
	req.method, req.target = f[0], f[1]
	req.http10 = f[2] == "HTTP/1.0"
	for n := 0; ; n++ {
		line, err = br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return errBadRequest
			}
			return err
		}
		if n > maxHeaderLines {
			return errBadRequest
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return errBadRequest
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqualFold(k, "host"):
			req.host = string(v)
		case asciiEqualFold(k, "user-agent"):
			req.ua = string(v)
		case asciiEqualFold(k, "connection"):
			lv := strings.ToLower(string(v))
			if strings.Contains(lv, "close") {
				req.close = true
			}
			if strings.Contains(lv, "keep-alive") {
				req.keepAlive10 = true
			}
		case asciiEqualFold(k, "content-length"):
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 {
				return errBadRequest
			}
			req.contentLength = n
		case asciiEqualFold(k, "transfer-encoding"):
			req.chunked = true
		}
	}
	if req.http10 && !req.keepAlive10 {
		req.close = true
	}
	// An absolute-form target carries the host.
	if rest, ok := strings.CutPrefix(req.target, "http://"); ok {
		req.host, req.target = cutAuthority(rest)
	} else if rest, ok := strings.CutPrefix(req.target, "https://"); ok {
		req.host, req.target = cutAuthority(rest)
	}
	return nil
}

func cutAuthority(s string) (host, target string) {
	i := strings.IndexByte(s, '/')
	if i < 0 {
		return s, "/"
	}
	return s[:i], s[i:]
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// hostOnly strips the port from a Host header and lowercases it.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			return strings.ToLower(h[1:i])
		}
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// countingWriter counts the bytes written to a connection and keeps when
// the last write began.
type countingWriter struct {
	w     io.Writer
	n     int64
	began int64 // Unix nanoseconds
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.began = nanos(time.Now())
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// exchange is the state of one connection while it serves requests.
type exchange struct {
	s       *Server
	c       net.Conn
	br      *bufio.Reader
	bw      *bufio.Writer
	cw      *countingWriter
	scheme  string
	local   netip.Addr
	nreq    int
	req     request
	entry   Entry
	scratch []byte
	body    []byte
}

func (s *Server) serveConn(c net.Conn, scheme string, id uint64) {
	defer s.forget(c)
	opened := connOpened(c)
	start := opened // the open, or the first request's start if earlier (the kernel's open is to a jiffy)
	x := &exchange{s: s, c: c, scheme: scheme, br: bufio.NewReaderSize(c, 8<<10)}
	x.cw = &countingWriter{w: c}
	x.bw = bufio.NewWriterSize(x.cw, 32<<10)
	if ta, ok := c.LocalAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		x.local = ap.Addr().Unmap()
	}
	server, client := c.LocalAddr().String(), c.RemoteAddr().String()
	arrived := arrivalOf(c)
	for {
		c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		err := readRequest(x.br, &x.req)
		if err != nil {
			if errors.Is(err, errBadRequest) {
				x.bw.WriteString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}
			break
		}
		x.nreq++
		// A client that stops reading must not hold the goroutine forever.
		c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
		prevEnd := x.entry.End // of the request before on this connection
		x.entry = Entry{Kind: "req", Conn: id, Scheme: scheme, Server: server, Client: client,
			Start: requestStart(arrived, prevEnd), Method: x.req.method, Target: x.req.target, UA: x.req.ua,
			Host: hostOnly(x.req.host)}
		start = min(start, x.entry.Start)
		x.cw.began = 0
		keep := x.respond()
		if keep && x.req.close {
			keep = false
		}
		if !keep || x.br.Buffered() == 0 {
			x.bw.Flush()
		}
		x.entry.End = responseEnd(x.cw.began)
		s.log.write(&x.entry)
		if !keep {
			break
		}
	}
	x.bw.Flush()
	// The end is stamped before the close: a client that waited for the
	// close (for our FIN) before opening its next connection must be seen
	// to have opened it after this one ended, however late this goroutine
	// runs again after Close. One the client closed ended when its FIN
	// came (connEnd).
	// Not before it opened either: a goroutine running late stamps the
	// open after a FIN that came at once (the log's reader refuses an end
	// before the start).
	closed := connEnd(c, max(opened, x.entry.End))
	c.Close()
	s.log.write(&Entry{Kind: "conn", Conn: id, Scheme: scheme, Server: server, Client: client,
		Start: start, End: closed, Bytes: x.cw.n, Requests: x.nreq})
}

// head writes a status line and headers. length < 0 means chunked.
func (x *exchange) head(status int, ctype string, length int64, close bool, extra ...string) {
	bw := x.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(status))
	bw.WriteByte(' ')
	bw.WriteString(statusText(status))
	bw.WriteString("\r\nServer: testweb\r\nDate: ")
	var d [32]byte
	bw.Write(time.Now().UTC().AppendFormat(d[:0], "Mon, 02 Jan 2006 15:04:05 GMT"))
	if ctype != "" {
		bw.WriteString("\r\nContent-Type: ")
		bw.WriteString(ctype)
	}
	if length >= 0 {
		bw.WriteString("\r\nContent-Length: ")
		bw.WriteString(strconv.FormatInt(length, 10))
	} else {
		bw.WriteString("\r\nTransfer-Encoding: chunked")
	}
	for i := 0; i+1 < len(extra); i += 2 {
		bw.WriteString("\r\n")
		bw.WriteString(extra[i])
		bw.WriteString(": ")
		bw.WriteString(extra[i+1])
	}
	if close {
		bw.WriteString("\r\nConnection: close")
	} else if x.req.http10 {
		bw.WriteString("\r\nConnection: keep-alive")
	}
	bw.WriteString("\r\n\r\n")
	x.entry.Status = status
}

// simple writes a complete response with a small body.
func (x *exchange) simple(status int, ctype string, body []byte, close bool, extra ...string) bool {
	x.head(status, ctype, int64(len(body)), close, extra...)
	if x.req.method != "HEAD" {
		x.bw.Write(body)
		x.entry.Bytes = int64(len(body))
	}
	return !close
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 301:
		return "Moved Permanently"
	case 302:
		return "Found"
	case 307:
		return "Temporary Redirect"
	case 308:
		return "Permanent Redirect"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 410:
		return "Gone"
	case 413:
		return "Content Too Large"
	case 414:
		return "URI Too Long"
	case 421:
		return "Misdirected Request"
	case 429:
		return "Too Many Requests"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 503:
		return "Service Unavailable"
	}
	return "Status"
}

// wait sleeps for d unless the server closes first; it reports whether the
// full time passed.
func (s *Server) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closed:
		return false
	}
}
