package collector

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setAckTimeout bounds how long bytes sent on raw may go unacknowledged
// before the kernel ends the connection with ETIMEDOUT (TCP_USER_TIMEOUT);
// 0 gives the kernel's default back. Failure leaves the default: only the
// time a dead connection takes to notice changes.
func setAckTimeout(raw net.Conn, d time.Duration) {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
