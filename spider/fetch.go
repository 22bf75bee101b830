package spider

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LookupFunc resolves a host name to addresses. The node passes its caching
// resolver's Lookup; nil means the operating system's resolver.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// newTransport builds the HTTP transport every fetch of a node goes through.
// It holds at most one connection per host (the design's "one persistent
// connection per bucket element") and keeps it alive between requests; its
// dialer opens a host's next connection only after the previous one closed
// and gap has passed (see connGate).
func newTransport(lookup LookupFunc, roots *x509.CertPool, timeout, gap time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	dialAddr := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if lookup == nil {
			return dialer.DialContext(ctx, network, addr)
		}
		if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			return dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		}
		addrs, err := lookup(ctx, host)
		if err != nil {
			return nil, &dnsError{host: host, err: err}
		}
		var last error = &dnsError{host: host, err: errors.New("no addresses")}
		for _, ip := range addrs {
			c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
	gate := &connGate{gap: gap, hosts: map[string]*hostConns{}}
	return &http.Transport{
		DialContext:            gate.wrap(dialAddr),
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxConnsPerHost:        1,
		MaxIdleConnsPerHost:    1,
		MaxIdleConns:           4096,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
	}
}

// connGate makes "one connection per host" hold from the server's side too.
// net/http closes a connection on its own when a server misbehaves (more
// body than announced, an abandoned response) and may dial the next one at
// once; the server may notice the close only after it accepted the new
// connection, and then saw two at a time. The gate delays a host's next dial
// until its previous connection is closed and gap has passed.
type connGate struct {
	gap   time.Duration
	mu    sync.Mutex
	hosts map[string]*hostConns // by dial address (host:port)
}

type hostConns struct {
	open      int
	lastClose time.Time
	changed   chan struct{} // closed and replaced when open drops
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (g *connGate) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := g.acquire(ctx, addr); err != nil {
			return nil, err
		}
		c, err := dial(ctx, network, addr)
		if err != nil {
			g.release(addr)
			return nil, err
		}
		return &gatedConn{Conn: c, release: func() { g.release(addr) }}, nil
	}
}

// acquire waits until addr has no open connection and its last one closed
// at least gap ago, then counts a new one.
func (g *connGate) acquire(ctx context.Context, addr string) error {
	for {
		g.mu.Lock()
		h := g.hosts[addr]
		if h == nil {
			h = &hostConns{changed: make(chan struct{})}
			g.hosts[addr] = h
		}
		var wait time.Duration
		if h.open == 0 {
			wait = g.gap - time.Since(h.lastClose)
			if wait <= 0 {
				h.open++
				g.mu.Unlock()
				return nil
			}
		}
		changed := h.changed
		g.mu.Unlock()
		var timer *time.Timer
		var expired <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			expired = timer.C
		}
		var err error
		select {
		case <-changed:
		case <-expired:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return err
		}
	}
}

func (g *connGate) release(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.hosts[addr]
	h.open--
	h.lastClose = time.Now()
	close(h.changed)
	h.changed = make(chan struct{})
	if h.open == 0 {
		// Once the gap has passed with nothing open, the entry says no more
		// than a missing one: drop it, so the gate does not grow with
		// every host the crawl ever dialled.
		closed := h.lastClose
		time.AfterFunc(g.gap, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.hosts[addr] == h && h.open == 0 && h.lastClose.Equal(closed) {
				delete(g.hosts, addr)
			}
		})
	}
}

// gatedConn tells the gate when it closes, once.
type gatedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *gatedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// dnsError marks a failed name lookup, so the summary can tell DNS failures
// from refused connections.
type dnsError struct {
	host string
	err  error
}

func (e *dnsError) Error() string { return fmt.Sprintf("lookup %s: %v", e.host, e.err) }
func (e *dnsError) Unwrap() error { return e.err }

// response is one fetched URL.
type response struct {
	status    int
	header    http.Header
	rawHeader []byte // header block as stored: "Name: value\r\n" lines
	body      []byte
	truncated bool  // the body was longer than the limit and was cut
	short     bool  // reading the body failed part way (readErr says why)
	readErr   error // why the body ended early
	serverIP  netip.Addr
	start     time.Time
	duration  time.Duration
}

// fetch GETs rawURL without following redirects, reading at most maxBody
// bytes of body within timeout.
func fetch(ctx context.Context, client *http.Client, userAgent, rawURL string, maxBody int64, timeout time.Duration) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := &response{start: time.Now()}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if ap, err := netip.ParseAddrPort(info.Conn.RemoteAddr().String()); err == nil {
			r.serverIP = ap.Addr().Unmap()
		}
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	r.header = resp.Header
	var hb bytes.Buffer
	resp.Header.Write(&hb)
	r.rawHeader = hb.Bytes()
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if int64(len(r.body)) > maxBody {
		r.body, r.truncated = r.body[:maxBody], true
	}
	r.duration = time.Since(r.start)
	if err != nil {
		// Keep what arrived: a page whose server closed early (or sent a
		// Content-Length longer than its body) still holds links, and
		// storing it loses nothing that was received.
		r.short = true
		r.readErr = err
	}
	return r, nil
}

// errorKind names the kind of a fetch error for the summary.
func errorKind(err error) string {
	var de *dnsError
	var ne net.Error
	switch {
	case errors.As(err, &de):
		return "dns"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "reset"
	case strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "tls"
	default:
		return "other"
	}
}
