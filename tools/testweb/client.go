package testweb

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// DialContext connects to a host of the web by name, at the address DNS
// would give (without DNS's failures), for clients that do not resolve
// through the web's DNS server.
func (s *Server) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	h, ok := s.web.Host(host)
	if !ok {
		return nil, fmt.Errorf("testweb: dial %s: no such host in the web", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp4", net.JoinHostPort(h.Addr.String(), port))
}

// Client is an HTTP client for the web: it dials hosts at their addresses,
// trusts the server's CA, and does not follow redirects (tests look at them).
func (s *Server) Client() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         s.DialContext,
			TLSClientConfig:     &tls.Config{RootCAs: s.CertPool()},
			MaxIdleConnsPerHost: 4,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
