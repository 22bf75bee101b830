package testweb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ServeConfig says where and how to serve a web. Zero durations and sizes
// mean their defaults.
type ServeConfig struct {
	// HTTPAddr is a loopback ip:port. Every host address of the web is bound
	// at this port, and so is this ip (the "front" address, which serves any
	// host by its Host header). Port 0 picks a free port.
	HTTPAddr string
	// HTTPSAddr is the same for HTTPS (default: HTTPAddr's ip, port 0).
	HTTPSAddr string
	// DNSAddr is the loopback ip:port of the DNS server (UDP and TCP);
	// empty means no DNS server.
	DNSAddr string
	// Log receives the request log as JSON lines; nil means no log.
	Log io.Writer
	// AnyAddr accepts a request for any host on any address; by default a
	// request arriving at another host's address answers 421.
	AnyAddr bool

	SlowDelay    time.Duration // slow hosts and slow robots.txt (default 2s)
	StallFor     time.Duration // how long a stalling response stalls before closing (default 10s)
	EndlessFor   time.Duration // how long an endless body runs at most (default 20s)
	EndlessBytes int64         // how many bytes an endless body sends at most (default 64 MiB)
	BombSize     int64         // inflated size of the gzip bomb (default 1 GiB)
	IdleTimeout  time.Duration // keep-alive idle timeout (default 30s)
	MaxConns     int           // connections served at once; more are closed (default 4096)
}

func (c ServeConfig) withDefaults() ServeConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SlowDelay, 2*time.Second)
	def(&c.StallFor, 10*time.Second)
	def(&c.EndlessFor, 20*time.Second)
	def(&c.IdleTimeout, 30*time.Second)
	if c.EndlessBytes <= 0 {
		c.EndlessBytes = 64 << 20
	}
	if c.BombSize <= 0 {
		c.BombSize = 1 << 30
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 4096
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:0"
	}
	return c
}

// Server serves a web on loopback. Create it with Start; stop it with Close.
type Server struct {
	web   *Web
	cfg   ServeConfig
	ports Ports
	front netip.Addr
	ipv6  bool
	ca    *authority
	tls   *tls.Config
	log   *requestLog
	dns   *dnsServer

	listeners []net.Listener
	connID    atomic.Uint64
	active    atomic.Int64
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	bombOnce sync.Once
	bomb     []byte

	httpAddr, httpsAddr, dnsAddr string
}

// Start serves web until ctx is done or Close is called.
func Start(ctx context.Context, web *Web, cfg ServeConfig) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{web: web, cfg: cfg, closed: make(chan struct{}), conns: map[net.Conn]struct{}{}, log: newRequestLog(cfg.Log)}
	front, httpPort, err := parseLoopback(cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("testweb: --http: %w", err)
	}
	s.front = front
	httpsFront, httpsPort := front, 0
	if cfg.HTTPSAddr != "" {
		httpsFront, httpsPort, err = parseLoopback(cfg.HTTPSAddr)
		if err != nil {
			return nil, fmt.Errorf("testweb: --https: %w", err)
		}
	}
	if s.ca, err = newAuthority(); err != nil {
		return nil, err
	}
	s.tls = s.ca.config(web)
	plain, port, err := s.bindAll(front, httpPort, true)
	if err != nil {
		return nil, fmt.Errorf("testweb: HTTP: %w", err)
	}
	s.ports.HTTP = port
	secure, sport, err := s.bindAll(httpsFront, httpsPort, false)
	if err != nil {
		closeAll(plain)
		return nil, fmt.Errorf("testweb: HTTPS: %w", err)
	}
	s.ports.HTTPS = sport
	s.httpAddr = net.JoinHostPort(front.String(), strconv.Itoa(port))
	s.httpsAddr = net.JoinHostPort(httpsFront.String(), strconv.Itoa(sport))
	if cfg.DNSAddr != "" {
		s.dns, err = startDNS(web, cfg.DNSAddr, s.ipv6)
		if err != nil {
			closeAll(plain)
			closeAll(secure)
			return nil, err
		}
		s.dnsAddr = s.dns.addr
	}
	for _, ln := range plain {
		s.listeners = append(s.listeners, ln)
		s.wg.Add(1)
		go s.accept(stampArrivals(ln), "http")
	}
	for _, ln := range secure {
		s.listeners = append(s.listeners, ln)
		s.wg.Add(1)
		go s.accept(tls.NewListener(stampArrivals(ln), s.tls), "https")
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				go s.Close()
				return
			case <-s.closed:
				return
			case <-t.C:
				s.log.flush()
			}
		}
	}()
	return s, nil
}

func parseLoopback(addr string) (netip.Addr, int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("address %q: want ip:port, e.g. 127.0.0.1:18080", addr)
	}
	if !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return netip.Addr{}, 0, fmt.Errorf("address %q: must be an IPv4 loopback address (127.0.0.0/8): the test web never listens outside loopback", addr)
	}
	return ap.Addr(), int(ap.Port()), nil
}

// bindAll listens on the front address and every host address at one port
// (chosen by the first bind when port is 0, retrying on clashes).
func (s *Server) bindAll(front netip.Addr, port int, withIPv6 bool) ([]net.Listener, int, error) {
	addrs := s.web.Addrs()
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		var lns []net.Listener
		first, err := net.Listen("tcp4", netip.AddrPortFrom(front, uint16(port)).String())
		if err != nil {
			return nil, 0, err
		}
		lns = append(lns, first)
		p := first.Addr().(*net.TCPAddr).Port
		ok := true
		for _, a := range addrs {
			if a == front {
				continue
			}
			ln, err := net.Listen("tcp4", netip.AddrPortFrom(a, uint16(p)).String())
			if err != nil {
				lastErr = err
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		if ok && (withIPv6 || s.ipv6) {
			ln, err := net.Listen("tcp6", netip.AddrPortFrom(netip.IPv6Loopback(), uint16(p)).String())
			switch {
			case err == nil:
				lns = append(lns, ln)
				if withIPv6 {
					s.ipv6 = true
				}
			case withIPv6:
				// No usable ::1: DNS then serves no AAAA records.
			default:
				ok, lastErr = false, err
			}
		}
		if ok {
			return lns, p, nil
		}
		closeAll(lns)
		if port != 0 {
			break
		}
	}
	return nil, 0, fmt.Errorf("binding the host addresses: %w", lastErr)
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		ln.Close()
	}
}

func (s *Server) accept(ln net.Listener, scheme string) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: back off, keep serving
			continue
		}
		if !loopbackPeer(c.RemoteAddr()) || s.active.Load() >= int64(s.cfg.MaxConns) {
			c.Close()
			continue
		}
		s.mu.Lock()
		select {
		case <-s.closed:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.active.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c, scheme, s.connID.Add(1))
	}
}

func loopbackPeer(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func (s *Server) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.active.Add(-1)
	s.wg.Done()
}

// Close stops listening, closes every connection (which ends every slow or
// endless response), stops DNS and flushes the log.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		closeAll(s.listeners)
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		if s.dns != nil {
			s.dns.close()
		}
	})
	s.wg.Wait()
	return s.log.flush()
}

// FlushLog writes out buffered log lines.
func (s *Server) FlushLog() error { return s.log.flush() }

// Web returns the web being served.
func (s *Server) Web() *Web { return s.web }

// Ports returns the HTTP and HTTPS ports every host shares.
func (s *Server) Ports() Ports { return s.ports }

// HTTPAddr, HTTPSAddr and DNSAddr are the front addresses (ip:port).
func (s *Server) HTTPAddr() string  { return s.httpAddr }
func (s *Server) HTTPSAddr() string { return s.httpsAddr }
func (s *Server) DNSAddr() string   { return s.dnsAddr }

// CertPool holds the CA the HTTPS listener's certificates chain to.
func (s *Server) CertPool() *x509.CertPool { return s.ca.pool }

// CACertPEM is the CA certificate in PEM, for a crawler's --ca flag.
func (s *Server) CACertPEM() []byte { return s.ca.pem }

// SeedURLs are the URLs a crawl starts from.
func (s *Server) SeedURLs() []string { return s.web.SeedURLs(s.ports) }

// Truth is the ground truth for this server's ports.
func (s *Server) Truth() *Truth { return s.web.Truth(s.ports) }

// SeedURLs are the seed URLs for the given ports.
func (w *Web) SeedURLs(pt Ports) []string {
	var out []string
	for _, h := range w.SeedHosts() {
		out = append(out, origin(h, h.Name, pt)+"/")
	}
	return out
}
