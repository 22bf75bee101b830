//go:build !linux

package communicator

import (
	"errors"
	"net"
)

func setDontFragment(*net.UDPConn) error {
	return errors.New("don't-fragment is set on Linux only")
}

func setBuffers(c *net.UDPConn, n int) (read, write int) {
	c.SetReadBuffer(n)
	c.SetWriteBuffer(n)
	return n, n // not readable portably: report what was asked
}
