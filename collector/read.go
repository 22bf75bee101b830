package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// readOutcome says what reading a response did to the connection.
type readOutcome uint8

const (
	// answered: a response arrived (its body may be short); the connection
	// may serve more when keep is set.
	answered readOutcome = iota
	// unanswered: the connection ended before any byte of a response; the
	// request may be sent again.
	unanswered
	// failed: no usable response (timeout before the head, a head that is
	// not HTTP, a head over the cap); the request is not sent again.
	failed
)

var (
	errHeadTooLarge   = errors.New("response header block over the limit")
	errTooManyInterim = errors.New("too many 1xx responses")
	errUpgrade        = errors.New("101 Switching Protocols to a request that asked for no upgrade")
	errHeadMismatch   = errors.New("header block length disagrees with the parser")
)

// headEnd finds the end of the header block at the start of br's buffer,
// reading more as needed, and returns its length. It fails when the block
// does not fit the buffer (Config.MaxHeader) or the connection ends.
func headEnd(br *bufio.Reader) (int, error) {
	from := 0
	for {
		n := br.Buffered()
		if n > 0 {
			buf, _ := br.Peek(n)
			// The block ends at the first empty line: "\n\n" or "\n\r\n",
			// as textproto sees it.
			for i := max(from, 0); i < n; i++ {
				if buf[i] != '\n' {
					continue
				}
				if i+1 < n && buf[i+1] == '\n' {
					return i + 2, nil
				}
				if i+2 < n && buf[i+1] == '\r' && buf[i+2] == '\n' {
					return i + 3, nil
				}
			}
			from = n - 2
			if n == br.Size() {
				return 0, errHeadTooLarge
			}
		}
		if _, err := br.Peek(n + 1); err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return 0, err
		}
	}
}

// exchange is one request on a connection: its item, when its turn began
// and the request object ReadResponse needs (for HEAD).
type exchange struct {
	idx       int
	req       *http.Request
	sent      time.Time
	reqBytes  int64
	pipelined bool
}

// readInfo is what reading one response found.
type readInfo struct {
	out         readOutcome
	keep        bool // the connection can carry another response
	serverClose bool // the server said it closes (Connection: close, HTTP/1.0, close-delimited)
	framed      bool // HTTP/1.1 with a known length: pipelining may follow
}

// readResponse reads the response to x into r, skipping 1xx responses.
func (f *fetcher) readResponse(c *conn, x *exchange, r *Result, turn time.Time) readInfo {
	cfg := &f.col.cfg
	start := c.pos()
	c.wire.deadline = turn.Add(cfg.ResponseTimeout)
	c.wire.span = 4*cfg.MaxBody + int64(cfg.MaxHeader)
	c.wire.limit = c.wire.n + c.wire.span
	c.wire.first = time.Time{}
	if c.br.Buffered() == 0 {
		c.wire.first = turn.Add(cfg.FirstByte)
	}
	// A request sent again (its earlier attempt failed after 1xx
	// responses) starts over: those were not this response's.
	r.Kind, r.Err, r.Interim = OK, nil, 0
	defer func() {
		r.WireBytes = c.pos() - start + x.reqBytes
		r.Timings.Total = time.Since(turn)
	}()
	var resp *http.Response
	for {
		n, err := headEnd(c.br)
		if errors.Is(err, errHeadTooLarge) && c.br.Size() < cfg.MaxHeader {
			// Most heads fit the small reader; this one moves the
			// connection to a reader the size of the header cap.
			f.growReader(c)
			n, err = headEnd(c.br)
		}
		if err != nil {
			if r.Interim == 0 && c.pos() == start && c.br.Buffered() == 0 && (f.ctx.Err() != nil || f.kindOf(err) == Reset) {
				r.Err = err
				return readInfo{out: unanswered}
			}
			r.Kind, r.Err = f.kindOf(err), err
			if errors.Is(err, errHeadTooLarge) {
				r.Kind, r.Err = TooLarge, fmt.Errorf("%w: no end within MaxHeader (%d bytes)", err, cfg.MaxHeader)
			}
			return readInfo{out: failed}
		}
		if r.Timings.FirstByte == 0 {
			r.Timings.FirstByte = time.Since(turn)
		}
		head, _ := c.br.Peek(n)
		hb := f.col.bufs.get(n)
		*hb = append(*hb, head...)
		p0 := c.pos()
		resp, err = http.ReadResponse(c.br, x.req)
		if err == nil && c.pos()-p0 != int64(n) {
			err = errHeadMismatch
		}
		if err == nil && (resp.StatusCode < 100 || resp.StatusCode > 599) {
			err = fmt.Errorf("status %d outside 100-599", resp.StatusCode)
		}
		if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
			err = errUpgrade
		}
		if err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
			f.col.bufs.put(hb)
			if r.Interim++; r.Interim > cfg.MaxInterim {
				r.Kind, r.Err = BadResponse, fmt.Errorf("%w: more than MaxInterim (%d) before the final one", errTooManyInterim, cfg.MaxInterim)
				return readInfo{out: failed}
			}
			continue
		}
		if err != nil {
			f.col.bufs.put(hb)
			r.Kind, r.Err = BadResponse, fmt.Errorf("response head: %w", err)
			return readInfo{out: failed}
		}
		r.Head, r.bufs[0] = *hb, hb
		break
	}
	h := resp.Header
	r.Status, r.ProtoMinor, r.Header = resp.StatusCode, resp.ProtoMinor, h
	// Every Content-Encoding line: codings listed on two lines were both
	// applied (decode refuses the pair), where Get would see the first.
	r.ContentType, r.ContentEncoding, r.Location = h.Get("Content-Type"), ContentCoding(h), h.Get("Location")
	r.RetryAfter, r.LastModified, r.ETag, r.XRobotsTag = h.Get("Retry-After"), h.Get("Last-Modified"), h.Get("Etag"), h.Get("X-Robots-Tag")
	r.ContentLength = resp.ContentLength
	chunked := len(resp.TransferEncoding) > 0
	info := readInfo{out: answered, serverClose: resp.Close}
	info.framed = resp.ProtoAtLeast(1, 1) && !resp.Close && (resp.ContentLength >= 0 || chunked)
	// Chunked with a Content-Length beside it is a smuggling pattern: read
	// this body by its chunks, then trust nothing after it.
	conflict := chunked && bytes.Contains(bytes.ToLower(r.Head), []byte("\ncontent-length:"))
	if !resp.ProtoAtLeast(1, 1) && bytes.Contains(bytes.ToLower(r.Head), []byte("\ntransfer-encoding:")) {
		// HTTP/1.0 has no transfer codings: ReadResponse ignores the
		// line and frames the body by Content-Length, which a sender that
		// chunked it may have got wrong. RFC 9112 §6.1: such framing is
		// faulty, and the connection closes after the message.
		conflict = true
	}

	maxBody := f.maxBody(r)
	hint := 16 << 10
	switch {
	case resp.Body == http.NoBody:
		// A HEAD's response announces the length of a body it has not.
		hint = 0
	case resp.ContentLength >= 0:
		// One more byte than announced: EOF then arrives without a grow.
		// Past the pool's largest class the buffer grows as bytes come:
		// sized from the announced length alone, a server announcing
		// MaxBody and hanging up cost a MaxBody allocation per response.
		hint = int(min(resp.ContentLength, maxBody, bodyHintMax-1)) + 1
	}
	wb := f.col.bufs.get(hint)
	complete, err := f.col.bufs.readCapped(resp.Body, &wb, maxBody)
	r.bufs[1] = wb
	r.WireBody = *wb
	switch {
	case err == nil && !complete:
		r.Kind, r.Err, r.Truncated = TooLarge, fmt.Errorf("body over %d bytes: truncated", maxBody), true
	case err != nil:
		if chunked && errors.Is(err, http.ErrLineTooLong) {
			// net/http's word for a chunk-size line too long, which
			// named a header where the head was fine.
			err = fmt.Errorf("a chunk-size line (with its extensions) of 4096 bytes or more: %w", err)
		}
		r.Short = true
		r.Kind, r.Err = f.kindOf(err), fmt.Errorf("body after %d bytes: %w", len(r.WireBody), err)
	default:
		resp.Body.Close() // at EOF: returns at once
		info.keep = !resp.Close && !conflict
	}
	f.decode(r)
	return info
}

// maxBody is the cap on r's body: Config.MaxBody, or List.RobotsMaxBody
// when lower and r is robots.txt.
func (f *fetcher) maxBody(r *Result) int64 {
	if r == f.robots && f.robotsMax > 0 {
		return min(f.robotsMax, f.col.cfg.MaxBody)
	}
	return f.col.cfg.MaxBody
}

// smallReader is the buffered reader a connection starts with: reads of a
// body at least this long bypass it (bufio reads straight into the body
// buffer), so a page is copied once.
const smallReader = 4 << 10

// growReader moves c to the fetcher's big reader (Config.MaxHeader bytes),
// carrying over what the small one holds.
func (f *fetcher) growReader(c *conn) {
	held, _ := c.br.Peek(c.br.Buffered())
	f.pre.held = append(f.pre.held[:0], held...)
	f.pre.w = &c.wire
	if f.brBig == nil {
		f.brBig = bufio.NewReaderSize(&f.pre, f.col.cfg.MaxHeader)
	} else {
		f.brBig.Reset(&f.pre)
	}
	c.br = f.brBig
	// Take the held bytes in at once, so that pos stays exact.
	c.br.Peek(len(f.pre.held))
}

// prefixReader returns held bytes, then reads the connection.
type prefixReader struct {
	held []byte
	w    *wireReader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.held) > 0 {
		n := copy(b, p.held)
		p.held = p.held[n:]
		return n, nil
	}
	return p.w.Read(b)
}
