package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimit is the status page's listener: it holds at most max
// connections open at once, more waiting in the kernel's backlog, so that
// idle ones cannot take the file descriptors the fetchers need. A
// connection kept alive between requests would hold its slot for the
// server's IdleTimeout, and one client keeping max of them open (a request
// a minute each) shut ctl and the dashboard out for as long as it liked;
// so a connection that finds every slot taken has the longest idle one
// closed, and one going idle while another waits is closed at once.
// Connections mid-request keep theirs: the server's timeouts end them.
type connLimit struct {
	net.Listener
	slots chan struct{} // one per open connection
	done  chan struct{} // closed by Close: an Accept waiting gives up
	once  sync.Once

	mu      sync.Mutex
	idle    map[net.Conn]time.Time // between requests, since when
	waiting bool                   // Accept waits for a slot
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), idle: map[net.Conn]time.Time{}}
}

// Accept waits for a free slot, then for a connection.
func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.mu.Lock()
		l.waiting = true
		l.closeOldestIdle()
		l.mu.Unlock()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
		}
		l.mu.Lock()
		l.waiting = false
		l.mu.Unlock()
		select {
		case <-l.done:
			return nil, net.ErrClosed
		default:
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *connLimit) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// connState is the http.Server's ConnState: it keeps the idle set.
func (l *connLimit) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s != http.StateIdle {
		delete(l.idle, c)
		return
	}
	if l.waiting {
		c.Close()
		return
	}
	l.idle[c] = time.Now()
}

// closeOldestIdle closes the connection idle the longest, if any.
func (l *connLimit) closeOldestIdle() {
	var oldest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	if oldest != nil {
		delete(l.idle, oldest)
		oldest.Close()
	}
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
