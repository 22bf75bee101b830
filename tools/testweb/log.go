package testweb

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Entry is one line of the request log (JSON lines). Kind "req" is one
// request; kind "conn" is one connection, written when it closes. Times are
// Unix nanoseconds, so the audit can compare them exactly.
type Entry struct {
	Kind   string `json:"ev"`             // "req" or "conn"
	Conn   uint64 `json:"conn"`           // connection id, unique per server
	Scheme string `json:"scheme"`         // "http" or "https"
	Server string `json:"server"`         // the address the client connected to (ip:port)
	Client string `json:"client"`         // the client's ip:port
	Start  int64  `json:"start"`          // req: its head arrived (arrival.go); conn: established (arrival.go), not after its first request
	End    int64  `json:"end"`            // req: the response's last write began; conn: closed, or the client's close read (late under load)
	Host   string `json:"host,omitempty"` // req: the Host header, lower case, no port
	Method string `json:"method,omitempty"`
	Target string `json:"target,omitempty"` // req: the request target as sent
	UA     string `json:"ua,omitempty"`
	Status int    `json:"status,omitempty"`
	Bytes  int64  `json:"bytes"` // req: body bytes sent; conn: all bytes sent
	// Disallowed marks a request the host's robots.txt forbids for the
	// request's User-Agent product token (per testweb's ground truth).
	Disallowed bool   `json:"disallowed,omitempty"`
	Requests   int    `json:"requests,omitempty"` // conn: requests served
	Note       string `json:"note,omitempty"`     // why the server did something unusual
}

// requestLog writes entries as JSON lines, buffered; safe for concurrent use.
type requestLog struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	enc *json.Encoder
	err error
}

func newRequestLog(w io.Writer) *requestLog {
	if w == nil {
		return nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	return &requestLog{bw: bw, enc: json.NewEncoder(bw)}
}

func (l *requestLog) write(e *Entry) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.err == nil {
		l.err = l.enc.Encode(e)
	}
	l.mu.Unlock()
}

func (l *requestLog) flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.bw.Flush()
	}
	return l.err
}

func nanos(t time.Time) int64 { return t.UnixNano() }
