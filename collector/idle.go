package collector

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Connections kept between lists (Config.KeepIdle).
//
// A crawl hands a host out list after list: with politeness delay 0 the
// next list of a host follows the last within milliseconds, and every list
// paid a dial (a TLS handshake for https) and a lingering close, on both
// ends: on a 1,000-host test web 2,588 connections for 8,180 pages, a fifth
// of the crawler's CPU. With KeepIdle set, a list that ends with its
// connection healthy (the last response kept it open, nothing unread,
// nothing in flight, the list not cancelled or stopped) leaves it here, by
// host name, for up to KeepIdle, and never past the list's context
// deadline; the origin's next list takes it instead of dialling. A host
// still never sees two connections from the collector at once: a host
// name has at most one idle connection, a list of the host
// takes it before it could dial (and closes it, lingering, when it is of
// another origin of the host: http and https), and one that expires is
// closed lingering (the server has closed its end) before a list of the
// host may dial again (take waits for it). A list's connection is kept only
// if no other list of its host name (another origin) is running, which
// has a connection of its own: kept, the two would overlap.
//
// With Config.KeepPerAddr, a list about to dial an address first closes
// the connections kept there for other hosts, and waits for any being
// closed: kept connections then never add to the connections to one
// address. Given the scheduler's limit on hosts of one address fetching at
// once, the collector's connections to it stay within that limit: after
// each dial they are those of the lists out, and parking and taking a
// kept connection only move one between a list and the pool.
//
// The server may have closed an idle connection meanwhile: take peeks at
// the socket (a non-blocking MSG_PEEK) and closes one that reads EOF or
// holds bytes nobody asked for. A server that closes it just after the peek
// leaves the list's first requests unanswered: requests sent on a reused
// connection that got no response at all are asked again on a new one, the
// send not counted against MaxAttempts (fetchAll, conn.reused). A
// connection a firewall dropped without a word reads as idle too: the
// kernel ends it when its first request goes unacknowledged (reuse), and
// its requests are asked again so.

// minKept is the least number of idle connections kept (at most
// max(Fetchers, minKept)): a crawl of many hosts, each handed out again
// while the others' lists run, finds its host's connection still there.
// An idle connection costs a socket and, with TLS, the TLS layer's
// buffers.
const minKept = 1024

type idleConns struct {
	mu      sync.Mutex
	conns   map[string]*idleConn
	closing map[string]*closingConn // host names whose expired connection is being closed
	running map[string]int          // lists running, by host name
	atAddr  map[netip.Addr]int      // kept or closing connections, by address
}

// closingConn is a kept connection being closed: done is closed once it is.
type closingConn struct {
	done chan struct{}
	addr netip.Addr
}

// begin counts a list of host key as running until end.
func (p *idleConns) begin(key string) {
	p.mu.Lock()
	if p.running == nil {
		p.running = map[string]int{}
	}
	p.running[key]++
	p.mu.Unlock()
}

func (p *idleConns) end(key string) {
	p.mu.Lock()
	if p.running[key]--; p.running[key] <= 0 {
		delete(p.running, key)
	}
	p.mu.Unlock()
}

type idleConn struct {
	c      *conn
	origin string // its origin's key; the map's key is the host name
	timer  *time.Timer
}

func (ic *idleConn) addr() netip.Addr { return ic.c.addr.Addr() }

// park leaves c, whose list ended cleanly, for the next list of host key
// (c of origin origin). It reports false (the caller closes c) when the
// host holds one already, another list of the host runs, or max are idle.
func (p *idleConns) park(key, origin string, c *conn, keep, linger time.Duration, max int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns, p.closing, p.atAddr = map[string]*idleConn{}, map[string]*closingConn{}, map[netip.Addr]int{}
	}
	if _, ok := p.conns[key]; ok || len(p.conns) >= max || p.closing[key] != nil || p.running[key] > 1 {
		return false
	}
	ic := &idleConn{c: c, origin: origin}
	ic.timer = time.AfterFunc(keep, func() { p.expire(key, ic, linger) })
	p.conns[key] = ic
	p.atAddr[ic.addr()]++
	return true
}

// expire closes ic if no list took it.
func (p *idleConns) expire(key string, ic *idleConn, linger time.Duration) {
	p.mu.Lock()
	if p.conns[key] != ic {
		p.mu.Unlock()
		return
	}
	cc := p.startClose(key, ic)
	p.mu.Unlock()
	p.finishClose(key, ic, cc, linger)
}

// startClose moves ic, host key's kept connection, to closing; p.mu held.
func (p *idleConns) startClose(key string, ic *idleConn) *closingConn {
	delete(p.conns, key)
	ic.timer.Stop()
	cc := &closingConn{done: make(chan struct{}), addr: ic.addr()}
	p.closing[key] = cc
	return cc
}

// finishClose closes ic, lingering, and ends its closing; p.mu not held.
func (p *idleConns) finishClose(key string, ic *idleConn, cc *closingConn, linger time.Duration) {
	closeLingering(ic.c.raw, linger)
	p.mu.Lock()
	delete(p.closing, key)
	p.dropAddr(cc.addr)
	p.mu.Unlock()
	close(cc.done)
}

// dropAddr counts one connection at addr as gone; p.mu held.
func (p *idleConns) dropAddr(addr netip.Addr) {
	if p.atAddr[addr]--; p.atAddr[addr] <= 0 {
		delete(p.atAddr, addr)
	}
}

// evict closes the connections kept at addr for hosts other than key, and
// waits until those and any others there being closed are (KeepPerAddr).
// ok is false when ctx ended meanwhile.
func (p *idleConns) evict(ctx context.Context, addr netip.Addr, key string, linger time.Duration) (ok bool) {
	p.mu.Lock()
	if p.atAddr[addr] == 0 {
		p.mu.Unlock()
		return true
	}
	for k, ic := range p.conns {
		if k != key && ic.addr() == addr {
			cc := p.startClose(k, ic)
			go p.finishClose(k, ic, cc, linger) // it takes p.mu once we let go
		}
	}
	// Those just started are closing now too: one wait covers all.
	var closing []chan struct{}
	for _, cc := range p.closing {
		if cc.addr == addr {
			closing = append(closing, cc.done)
		}
	}
	p.mu.Unlock()
	for _, done := range closing {
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// take returns host key's idle connection if it is of origin origin and
// alive. Otherwise it returns nil, after waiting for an expired one of the
// host to be closed or closing one of another origin or that the server
// closed; closed then says so, and the caller waits the reconnect gap
// before it dials, as between a list's connections: the server may log a
// connection's end only after the client saw it. ok is false when ctx
// ended meanwhile.
func (p *idleConns) take(ctx context.Context, key, origin string, linger time.Duration) (c *conn, closed, ok bool) {
	p.mu.Lock()
	for p.closing[key] != nil {
		done := p.closing[key].done
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, false, false
		}
		closed = true
		p.mu.Lock()
	}
	ic := p.conns[key]
	if ic != nil {
		delete(p.conns, key)
		p.dropAddr(ic.addr())
	}
	p.mu.Unlock()
	if ic == nil {
		return nil, closed, true
	}
	ic.timer.Stop()
	if ic.origin != origin {
		return nil, true, closeLingeringCtx(ctx, ic.c.raw, linger)
	}
	switch peek(ic.c.raw) {
	case peekIdle:
		return ic.c, false, true
	case peekEOF: // the server closed it: nothing to wait for
		ic.c.raw.Close()
	default: // bytes nobody asked for, or an error
		return nil, true, closeLingeringCtx(ctx, ic.c.raw, linger)
	}
	return nil, true, true
}

// closeAll closes every idle connection, lingering, and waits for those
// being closed.
func (p *idleConns) closeAll(linger time.Duration) {
	p.mu.Lock()
	var wg sync.WaitGroup
	for key, ic := range p.conns {
		delete(p.conns, key)
		p.dropAddr(ic.addr())
		ic.timer.Stop()
		wg.Go(func() { closeLingering(ic.c.raw, linger) })
	}
	var closing []chan struct{}
	for _, cc := range p.closing {
		closing = append(closing, cc.done)
	}
	p.mu.Unlock()
	wg.Wait()
	for _, done := range closing {
		<-done
	}
}

// CloseIdle closes the connections kept for further lists (KeepIdle),
// each lingering until the server has closed its end, and returns once
// they are closed.
func (c *Collector) CloseIdle() { c.kept.closeAll(c.cfg.Linger) }

type peekResult int

const (
	peekIdle  peekResult = iota // nothing to read: the connection may be used
	peekEOF                     // the server closed it
	peekBytes                   // bytes pending, or the socket failed
)

// peek looks at a parked connection's socket without blocking or reading.
func peek(raw net.Conn) peekResult {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return peekBytes
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peekBytes
	}
	res := peekBytes
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			res = peekIdle
		case err == nil && n == 0:
			res = peekEOF
		}
		return true // never wait
	})
	if err != nil {
		return peekBytes
	}
	return res
}

// closeLingeringCtx is closeLingering for a list, whose cancellation
// closes raw at once: deaf to it, a list cancelled while it drained waited
// the whole linger for a server that kept its end open. ok is false when
// ctx ended.
func closeLingeringCtx(ctx context.Context, raw net.Conn, linger time.Duration) (ok bool) {
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	closeLingering(raw, linger)
	stop()
	return ctx.Err() == nil
}

// closeLingering half-closes raw and drains it for up to linger, so that
// the server has closed its end before the origin's next connection opens,
// then closes it.
func closeLingering(raw net.Conn, linger time.Duration) {
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	raw.SetReadDeadline(time.Now().Add(linger))
	// Drain the socket, not the TLS layer: only the server's close
	// matters here. At most 1 MiB, then a reset ends an endless sender.
	io.CopyN(io.Discard, raw, 1<<20)
	raw.Close()
}
