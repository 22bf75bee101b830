package collector

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// conn is one connection of a list: the socket, the reader that counts and
// times every read, and the buffered reader responses are parsed from.
type conn struct {
	raw   net.Conn // the TCP connection
	c     net.Conn // raw, or the TLS connection over it
	wire  wireReader
	br    *bufio.Reader
	bw    *bufio.Writer
	addr  netip.AddrPort
	stop  func() bool // unregisters the cancellation hook
	setup Timings     // DNS, Connect, TLS of this connection
	seq   int         // 1-based within the list

	answered  int  // responses read
	canPipe   bool // the first response allows pipelining
	pipeSeen  int  // pipelined requests answered
	sent      int  // requests sent
	written   int64
	setupUsed bool // setup timings already given to a result
	reused    bool // kept from an earlier list (idle.go), not dialled for this one
}

// pos is the stream offset of the next byte ReadResponse would see.
func (c *conn) pos() int64 { return c.wire.n - int64(c.br.Buffered()) }

// wireReader counts bytes read from a connection, caps them (limit) and
// sets the read deadline before every read: the sooner of the response's
// deadline and now+idle, or a one-shot first-byte deadline.
type wireReader struct {
	c        net.Conn
	n        int64
	limit    int64     // the stream offset the response being read may not pass
	span     int64     // bytes one response may take (4×MaxBody + MaxHeader), for wireLimitError
	deadline time.Time // whole response
	first    time.Time // next read only (first byte), when not zero
	idle     time.Duration
	reads    int
	poll     time.Time // when not zero, the deadline of reads instead (pollRead)
	// firstByte and whole are Config.FirstByte and ResponseTimeout, for
	// the error of a read that passed their deadline (readTimeout).
	firstByte, whole time.Duration
}

// wireLimitError is a response that took more bytes on the wire than one
// may (a trailer or chunk headers without end): said as "the wire
// limit", an operator could not tell which settings made it nor its size.
type wireLimitError struct{ span int64 }

func (e *wireLimitError) Error() string {
	return fmt.Sprintf("response over %d bytes on the wire (4×MaxBody + MaxHeader)", e.span)
}

// readTimeout is a read that passed one of a response's deadlines, and
// says which: a response trickled a byte at a time, cut at the whole
// response's timeout, and one that stopped, cut at the idle timeout,
// were both reported as "i/o timeout".
type readTimeout struct {
	which deadlineKind
	limit time.Duration
	err   error // the read's, os.ErrDeadlineExceeded under it
}

// deadlineKind is which of a response's timeouts set a read's deadline.
type deadlineKind uint8

const (
	pollDeadline  deadlineKind = iota // pollRead's: its timeout is no failure
	firstDeadline                     // Config.FirstByte
	idleDeadline                      // Config.IdleRead
	wholeDeadline                     // Config.ResponseTimeout
)

func (e *readTimeout) Error() string {
	var what string
	switch e.which {
	case firstDeadline:
		what = "no byte of the response within FirstByte (" + e.limit.String() + ") of its turn"
	case idleDeadline:
		what = "no byte for IdleRead (" + e.limit.String() + ") within the response"
	default:
		what = "the response not complete within ResponseTimeout (" + e.limit.String() + ") of its turn"
	}
	return what + ": " + e.err.Error()
}
func (e *readTimeout) Unwrap() error { return e.err }
func (e *readTimeout) Timeout() bool { return true }

func (w *wireReader) Read(p []byte) (int, error) {
	if w.n >= w.limit {
		return 0, &wireLimitError{w.span}
	}
	if rest := w.limit - w.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	d, which, limit := w.first, firstDeadline, w.firstByte
	if d.IsZero() {
		d, which, limit = time.Now().Add(w.idle), idleDeadline, w.idle
	}
	w.first = time.Time{}
	if d.After(w.deadline) {
		d, which, limit = w.deadline, wholeDeadline, w.whole
	}
	if !w.poll.IsZero() {
		d, which = w.poll, pollDeadline
	}
	w.c.SetReadDeadline(d)
	n, err := w.c.Read(p)
	w.n += int64(n)
	w.reads++
	if err != nil && which != pollDeadline && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &readTimeout{which: which, limit: limit, err: err}
	}
	return n, err
}

// heldMore reports whether bytes past the response just read have
// arrived: in c.br's buffer; on TLS, in the TLS layer, which returns one
// record per read, so that a response nobody asked for in a record of its
// own stays there; or in a TCP socket, where a body of smallReader bytes or
// more leaves what follows it, read straight into the body buffer up to
// its length. c.br.Buffered() alone saw none of these.
func heldMore(c *conn) bool {
	if c.br.Buffered() > 0 {
		return true
	}
	if _, ok := c.raw.(syscall.Conn); !ok {
		return false // a test's pipe: nothing to peek at
	}
	if c.c == c.raw {
		return peek(c.raw) == peekBytes
	}
	if pollRead(c, time.Unix(1, 0)) {
		return true
	}
	// Bytes in a TLS connection's socket need not be data: a TLS 1.3
	// server's session tickets often follow the first response. Take in
	// what is there, waiting a moment at most for the rest of a record.
	return peek(c.raw) == peekBytes && pollRead(c, time.Now().Add(time.Millisecond))
}

// pollRead reads into c.br with the deadline until: a deadline long past
// reads only what the TLS layer holds already (a TCP socket reads
// nothing). It reports whether bytes came.
func pollRead(c *conn, until time.Time) bool {
	c.wire.poll = until
	_, err := c.br.Peek(1)
	c.wire.poll = time.Time{}
	return err == nil
}

// dialError carries the kind of a failed connection attempt.
type dialError struct {
	kind Kind
	err  error
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// dial opens a connection to o, trying its addresses in order (at most
// four), with TLS for https.
func (f *fetcher) dial(ctx context.Context, o *origin) (*conn, error) {
	cfg := &f.col.cfg
	if f.col.dialRaw != nil { // tests: a scripted connection
		raw, err := f.col.dialRaw(ctx)
		if err != nil {
			return nil, &dialError{Connect, err}
		}
		return f.setup(ctx, &conn{raw: raw, c: raw}), nil
	}
	t0 := time.Now()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(o.host); err == nil {
		addrs = append(f.addrs[:0], ip)
	} else {
		a, err := cfg.Lookup(ctx, o.host)
		if err != nil {
			return nil, &dialError{DNS, fmt.Errorf("lookup %s: %w", o.host, err)}
		}
		if len(a) == 0 {
			return nil, &dialError{DNS, fmt.Errorf("lookup %s: no addresses", o.host)}
		}
		addrs = a
	}
	c := &conn{}
	c.setup.DNS = time.Since(t0)
	t1 := time.Now()
	var last error
	d := net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	for i, ip := range addrs {
		if i == 4 {
			break
		}
		ap := netip.AddrPortFrom(ip.Unmap(), o.port)
		if cfg.KeepIdle > 0 && cfg.KeepPerAddr && !f.col.kept.evict(ctx, ap.Addr(), o.host, cfg.Linger) {
			return nil, &dialError{Connect, ctx.Err()}
		}
		raw, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			c.raw, c.addr = raw, ap
			break
		}
		last = err
	}
	if c.raw == nil {
		return nil, &dialError{Connect, last}
	}
	c.setup.Connect = time.Since(t1)
	c.c = c.raw
	if o.tls {
		t2 := time.Now()
		tc := tls.Client(c.raw, f.col.tlsConfig(o.host))
		hctx, cancel := context.WithTimeout(ctx, cfg.TLSTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			c.raw.Close()
			// A handshake that never ends is the host failing, as a
			// connect timeout is: TLS, not Timeout, which is a response's
			// and, with nothing sent, made every URL look untried.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("handshake not done after %v: %w", cfg.TLSTimeout, err)
			}
			return nil, &dialError{TLS, fmt.Errorf("tls %s: %w", o.host, err)}
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			c.raw.Close()
			return nil, &dialError{TLS, fmt.Errorf("tls %s: server chose ALPN %q", o.host, p)}
		}
		c.setup.TLS = time.Since(t2)
		c.c = tc
	}
	return f.setup(ctx, c), nil
}

// setup readies a dialled connection.
func (f *fetcher) setup(ctx context.Context, c *conn) *conn {
	cfg := &f.col.cfg
	c.wire = wireReader{c: c.c, limit: 1 << 62, idle: cfg.IdleRead, deadline: time.Now().Add(cfg.ResponseTimeout),
		firstByte: cfg.FirstByte, whole: cfg.ResponseTimeout}
	c.br = f.reader(&c.wire)
	cutoff, _ := ctx.Deadline()
	c.bw = f.writer(c.c, cutoff)
	// Cancelling the list closes the socket under any read or write.
	raw := c.raw
	c.stop = context.AfterFunc(ctx, func() { raw.Close() })
	return c
}

// close closes c. With linger (we gave up on the connection, the server may
// still be writing or waiting), it first half-closes and drains for up to
// Config.Linger, so that the server has closed its end before the list's
// next connection opens. The list's cancellation still closes the socket
// meanwhile: a list cancelled while it drained waited the whole Linger for
// a server that kept its end open.
func (f *fetcher) close(c *conn, linger bool) {
	f.release(c)
	if linger {
		closeLingering(c.raw, f.col.cfg.Linger)
	} else {
		c.raw.Close()
	}
	c.stop()
	f.lastClose = time.Now()
}

// park leaves c, at the end of a list that used it cleanly, for its
// origin's next list (idle.go); false: the caller closes it.
func (f *fetcher) park(o *origin, c *conn) bool {
	cfg := &f.col.cfg
	if cfg.KeepIdle <= 0 || f.ctx.Err() != nil || f.stopped() || c.answered == 0 || c.br.Buffered() > 0 || c.bw.Buffered() > 0 {
		return false
	}
	if !c.stop() { // the list's cancellation closed the socket
		return false
	}
	// No longer than the list's context allowed: a cluster node's list
	// ends where its slot's guard begins, and past it another node may
	// connect to the host.
	keep := cfg.KeepIdle
	if d, ok := f.ctx.Deadline(); ok {
		if keep = min(keep, time.Until(d)); keep <= 0 {
			return false
		}
	}
	c.stop = func() bool { return true }
	if !f.col.kept.park(o.host, o.key, c, keep, cfg.Linger, max(cfg.Fetchers, minKept)) {
		return false
	}
	f.release(c)
	c.br, c.bw = nil, nil // the fetcher's, which its next list resets
	return true
}

// release adds c's reads and writes to the list's counts as c leaves the
// list, closed or parked.
func (f *fetcher) release(c *conn) {
	f.reads += c.wire.reads
	f.writes += f.cw.writes
	f.cw.writes = 0
}

// reuse readies a parked connection for this fetcher's list, as setup
// readies a dialled one; the per-list counts start again.
//
// A firewall or NAT that dropped the connection's state while it was
// parked drops its packets without a word, which take's peek cannot see:
// the list's first request went unanswered until the first-byte timeout
// (30 s) and failed, Timeout, to be fetched again later. A live server's
// kernel acknowledges a request at once, however slow its answer, so the
// kernel is asked to end the connection (ETIMEDOUT, taken for a reset:
// decode.go's kindOf) when the request goes unacknowledged for as long as
// a dial may wait for the server's SYN-ACK (ConnectTimeout): the request
// then goes again on a new connection, as on one the server closed
// (fetchAll's stale). The first response gives the default back.
func (f *fetcher) reuse(ctx context.Context, c *conn) *conn {
	canPipe := c.canPipe
	*c = conn{raw: c.raw, c: c.c, addr: c.addr, canPipe: canPipe, reused: true}
	setAckTimeout(c.raw, f.col.cfg.ConnectTimeout)
	return f.setup(ctx, c)
}
