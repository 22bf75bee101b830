package testweb

import (
	"crypto/tls"
	"net"
	"time"
)

// A request's interval in the log is taken where the client's own doings
// bound it, not where the server's goroutine got to run: it starts when
// its head reached the server's socket, as the kernel stamped it, and ends
// when the server began writing the response's last bytes, before which
// the client cannot have had the whole answer. Stamped when the server
// read the head and after its write returned, both came up to a second late
// on a loaded machine (0.5 s for a read with 3 busy loops on 2 cores),
// and the audits took a node's request sent before its slot's guard for
// one sent in another node's slot.

// stampsOf is the connection under c (under its TLS, if any) that keeps
// the kernel's stamps, or nil when its listener keeps none.
func stampsOf(c net.Conn) *arrivalConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	ac, _ := c.(*arrivalConn)
	return ac
}

// arrivalOf returns how to ask c when the bytes it read last arrived (Unix
// nanoseconds, 0 when the kernel gives no stamp).
func arrivalOf(c net.Conn) func() int64 {
	if ac := stampsOf(c); ac != nil {
		return ac.arrived
	}
	return func() int64 { return 0 }
}

// requestStart is when the head just read arrived: the kernel's stamp of
// the newest bytes read, which arrived with or after the head's first
// byte, or now when there is none. A request that came while the one
// before it on the connection was being answered (pipelined, or sent
// before this server stamped the answer's end) starts at that end: the
// server answers one at a time, and the audits count requests in progress.
func requestStart(arrived func() int64, prevEnd int64) int64 {
	now := nanos(time.Now())
	if a := arrived(); a > 0 && a < now {
		return max(a, prevEnd)
	}
	return now
}

// responseEnd is when the response's last write began, or now when it
// wrote nothing yet (left in the buffer behind a pipelined request, sent
// with the next response).
func responseEnd(began int64) int64 {
	if began > 0 {
		return began
	}
	return nanos(time.Now())
}

// connOpened is when c was established, as the kernel stamped it when
// it was accepted (a loaded server's goroutine stamping it itself came
// seconds late: a connection the client closed at once was logged as
// opened and ended then, in another client's turn), not after now; now
// when the kernel gives no stamp.
func connOpened(c net.Conn) int64 {
	now := nanos(time.Now())
	if ac := stampsOf(c); ac != nil {
		if o := ac.established(); o > 0 && o < now {
			return o
		}
	}
	return now
}

// connEnd is when the connection ended: for one the client closed, when
// its FIN arrived (a loaded server reads the end late, and the cluster
// tests' audit would see the client's next connection, to this host or
// another node's, open while this one still was), never before notBefore
// (its last response's end, its open); else now.
func connEnd(c net.Conn, notBefore int64) int64 {
	now := nanos(time.Now())
	if ac := stampsOf(c); ac != nil {
		if f := ac.finished(); f > 0 && f < now {
			return max(f, notBefore)
		}
	}
	return now
}
