package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/status"
)

// statusServer is a node's status page while it runs.
type statusServer struct {
	Addr  string // where it listens (the port resolved)
	Token string
	dir   string // the data directory, whose STATUS_ADDR names Addr
	srv   *http.Server
	done  chan struct{}
	gate  handlerGate
}

// handlerGate lets Close wait for every request handler, not only for the
// connections: http.Server.Close (after Shutdown's grace ran out) closes
// the connections but leaves handlers running, and a handler still taking
// a snapshot of the node after node.Close would read closed files.
type handlerGate struct {
	mu     sync.Mutex
	closed bool
	active sync.WaitGroup
}

// wrap admits requests until close; later ones get 503.
func (g *handlerGate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			status.ReplyError(w, http.StatusServiceUnavailable, "the node is closing")
			return
		}
		g.active.Add(1)
		g.mu.Unlock()
		defer g.active.Done()
		h.ServeHTTP(w, r)
	})
}

// close refuses new requests and waits for those in progress.
func (g *handlerGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.active.Wait()
}

// maxStatusConns bounds the status page's open connections (connLimit): a
// dashboard, a Prometheus scraper and kspider ctl need a few.
const maxStatusConns = 32

// startStatus serves node's status page, JSON, metrics and control on
// addr ("" or "off": none) for `kspider run` and `kspider demo`. The
// control token is read from (or made in) dir, the data directory, whose
// file is named on w with the address; a token refused turns control off
// and is warned about, as is an address other than loopback. A failure to listen is returned: the caller decides whether to
// crawl without the page (run warns and goes on). The address is recorded
// in dir's STATUS_ADDR for kspider ctl until Close.
func startStatus(ctx context.Context, w io.Writer, node *spider.Node, addr, dir string) (*statusServer, error) {
	// One a crash left names an address this run may not listen on: ctl
	// would send there.
	if err := spider.RemoveStatusAddr(dir); err != nil {
		fmt.Fprintf(w, "warning: status page: %v (kspider ctl needs --status)\n", err)
	}
	if addr == "" || addr == "off" {
		return nil, nil
	}
	// A token refused (a file others can read) costs control only: the
	// page and /metrics are the operator's monitoring, and a permissions
	// slip must not blind it.
	var control status.Controller = node
	var controlOff string
	tok, err := status.Token(dir)
	if err != nil {
		fmt.Fprintf(w, "warning: status page: control token: %v; control requests are refused (kspider ctl will not work), the page and /metrics are served\n", err)
		control, tok = nil, ""
		// Said to ctl too: its operator may have fixed the file since and
		// see nothing wrong with it; control comes back with a restart only.
		controlOff = fmt.Sprintf("the token file was refused when the node started (%v); see the node's log. Fix the file, then restart the node", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	limit := newConnLimit(ln, maxStatusConns)
	if !status.IsLoopback(addr) {
		fmt.Fprintf(w, "warning: the status page listens on %s, not loopback only: anyone who reaches it sees the crawl (control still needs the token)\n", addr)
	}
	s := &statusServer{Addr: ln.Addr().String(), Token: tok, dir: dir, done: make(chan struct{})}
	if err := spider.WriteStatusAddr(dir, s.Addr); err != nil {
		fmt.Fprintf(w, "warning: status page: %v (kspider ctl needs --status %s)\n", err, s.Addr)
	}
	handler := (&status.Server{Node: node, Control: control, Token: tok, ControlOff: controlOff, Loopback: status.IsLoopback(addr)}).Handler()
	s.srv = &http.Server{Handler: s.gate.wrap(handler),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: time.Minute, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnState: limit.connState}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(limit); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(w, "status page: %v\n", err)
		}
	}()
	// The token itself is not printed: stderr goes to logs (the journal of
	// deploy/kspider.service) that users who may not read the token file
	// can read, and whoever holds it drives the node.
	if control == nil {
		fmt.Fprintf(w, "status page: http://%s/ (JSON /status, metrics /metrics); control off\n", s.Addr)
		return s, nil
	}
	fmt.Fprintf(w, "status page: http://%s/ (JSON /status, metrics /metrics); control token in %s\n",
		s.Addr, filepath.Join(dir, status.TokenFile))
	return s, nil
}

// Close stops the server, letting requests in progress end for a second,
// then closing their connections; it returns once no handler runs, so the
// node may be closed after it.
func (s *statusServer) Close() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	s.gate.close()
	<-s.done
	spider.RemoveStatusAddr(s.dir) // a stale one only makes ctl say no node answers
}
