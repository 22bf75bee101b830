package communicator

import (
	"net"
	"syscall"
)

// setDontFragment sets IP_PMTUDISC_DO (and its IPv6 twin), so a datagram
// larger than the path MTU fails at send instead of being fragmented.
func setDontFragment(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
		if serr != nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_MTU_DISCOVER, syscall.IPV6_PMTUDISC_DO)
		} else {
			// A dual-stack socket needs both; ignore failure on IPv4-only ones.
			syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IPV6, syscall.IPV6_MTU_DISCOVER, syscall.IPV6_PMTUDISC_DO)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// setBuffers asks for n-byte socket buffers and returns what the kernel
// granted (Linux reports twice the usable size; we report it halved).
func setBuffers(c *net.UDPConn, n int) (read, write int) {
	c.SetReadBuffer(n)
	c.SetWriteBuffer(n)
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0
	}
	rc.Control(func(fd uintptr) {
		read, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		write, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	return read / 2, write / 2
}
