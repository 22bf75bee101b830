//go:build !linux

package testweb

import "net"

// stampArrivals leaves ln as it is: without the kernel's receive stamps
// the log keeps the time a request was read.
func stampArrivals(ln net.Listener) net.Listener { return ln }

type arrivalConn struct{ net.Conn }

func (c *arrivalConn) arrived() int64 { return 0 }

func (c *arrivalConn) finished() int64 { return 0 }

func (c *arrivalConn) established() int64 { return 0 }
