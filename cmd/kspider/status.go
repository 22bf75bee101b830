package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/status"
	"golang.org/x/net/netutil"
)

// statusServer is a node's status page while it runs.
type statusServer struct {
	Addr  string // where it listens (the port resolved)
	Token string
	srv   *http.Server
	done  chan struct{}
}

// maxStatusConns bounds the status page's open connections: a dashboard,
// a Prometheus scraper and kspider ctl need a few.
const maxStatusConns = 32

// startStatus serves node's status page, JSON, metrics and control on
// addr ("" or "off": none) for `kspider run` and `kspider demo`. The
// control token is read from (or made in) dir, the data directory, and
// printed on w with the address; an address other than loopback is warned
// about. A failure to listen is returned: the caller decides whether to
// crawl without the page (run warns and goes on).
func startStatus(ctx context.Context, w io.Writer, node *spider.Node, addr, dir string) (*statusServer, error) {
	if addr == "" || addr == "off" {
		return nil, nil
	}
	tok, err := status.Token(dir)
	if err != nil {
		return nil, fmt.Errorf("status page: control token: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	// Connections past the limit wait in the kernel's backlog: idle ones
	// held open (each up to IdleTimeout) cannot take the file descriptors
	// the fetchers need.
	ln = netutil.LimitListener(ln, maxStatusConns)
	if !status.IsLoopback(addr) {
		fmt.Fprintf(w, "warning: the status page listens on %s, not loopback only: anyone who reaches it sees the crawl (control still needs the token)\n", addr)
	}
	s := &statusServer{Addr: ln.Addr().String(), Token: tok, done: make(chan struct{}),
		srv: &http.Server{Handler: (&status.Server{Node: node, Control: node, Token: tok, Loopback: status.IsLoopback(addr)}).Handler(),
			ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			IdleTimeout: time.Minute, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(w, "status page: %v\n", err)
		}
	}()
	fmt.Fprintf(w, "status page: http://%s/ (JSON /status, metrics /metrics); control token %s (in %s)\n",
		s.Addr, tok, filepath.Join(dir, status.TokenFile))
	return s, nil
}

// Close stops the server, letting requests in progress end for a second.
func (s *statusServer) Close() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.done
}
