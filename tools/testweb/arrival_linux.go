package testweb

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// arrivalListener hands out connections whose reads keep the kernel's
// receive stamp (SO_TIMESTAMPNS).
type arrivalListener struct {
	*net.TCPListener
}

// stampArrivals asks the kernel to stamp what ln's connections receive.
// The listener asks too, from the start: the kernel turns stamping on a
// moment after a first socket asks (deferred work), and until then stamps
// a read with the time it is read, so connections asking one by one as
// they came got the read's time for their first bytes.
func stampArrivals(ln net.Listener) net.Listener {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return ln
	}
	if rc, err := tl.SyscallConn(); err == nil {
		stampReceived(rc)
	}
	return arrivalListener{tl}
}

// stampReceived sets SO_TIMESTAMPNS on the socket of rc.
func stampReceived(rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

func (l arrivalListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	rc, err := c.SyscallConn()
	if err != nil || stampReceived(rc) != nil {
		return c, nil // no stamps: the log keeps the read's time
	}
	return &arrivalConn{TCPConn: c, rc: rc, opened: establishedAt(rc)}, nil
}

// establishedAt is when the connection under rc was established (its
// handshake's last ACK came), asked before the server wrote on it: the
// kernel sets the time of the last data sent (TCP_INFO's last_data_sent,
// in milliseconds ago, to a jiffy) as the handshake makes the connection,
// and only the server's writes move it, where the client's first request
// moves last_data_recv and last_ack_recv. 0 when the kernel does not say.
func establishedAt(rc syscall.RawConn) int64 {
	var at int64
	rc.Control(func(fd uintptr) {
		now := nanos(time.Now())
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			// A jiffy later than the kernel says: its time is to a
			// jiffy either way, and an open stamped early would make
			// two clients' connections overlap that did not.
			at = now - int64(ti.Last_data_sent)*int64(time.Millisecond) + int64(kernelStampSlack)
		}
	})
	return at
}

// kernelStampSlack is the most a time TCP_INFO gives (in milliseconds ago,
// counted in jiffies) can be off: a jiffy, 10 ms at the smallest HZ
// Linux has (100). An open is moved later and a FIN earlier by it, so
// that the audit's overlaps of connections are never invented by the
// stamps, only hidden up to twice this; the requests' stamps
// (SO_TIMESTAMPNS) are exact.
const kernelStampSlack = 10 * time.Millisecond

// arrivalConn is a TCP connection read with recvmsg, keeping the stamp of
// the newest bytes read.
type arrivalConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	oob  [64]byte
	last atomic.Int64
	fin  atomic.Int64 // when the client's FIN arrived (finArrived)
	// opened is when the connection was established (establishedAt),
	// 0 when the kernel did not say.
	opened int64
}

func (c *arrivalConn) arrived() int64 { return c.last.Load() }

func (c *arrivalConn) established() int64 { return c.opened }

func (c *arrivalConn) finished() int64 { return c.fin.Load() }

// finArrived is when the client's FIN arrived, asked at the read that
// found it: the FIN is the newest segment the client sent, and the kernel
// keeps the time of the newest ACK received (TCP_INFO's last_ack_recv, in
// milliseconds ago, to a jiffy), so a loaded server's goroutine reading
// the end late still learns when it came. 0 when the kernel does not say.
func finArrived(rc syscall.RawConn) int64 {
	var fin int64
	rc.Control(func(fd uintptr) {
		now := nanos(time.Now())
		if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			fin = now - int64(ti.Last_ack_recv)*int64(time.Millisecond) - int64(kernelStampSlack) // (kernelStampSlack)
		}
	})
	return fin
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var err error
	rerr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, err = syscall.Recvmsg(int(fd), p, c.oob[:], 0)
			if err != syscall.EINTR {
				return err != syscall.EAGAIN
			}
		}
	})
	if rerr == nil && err != nil {
		rerr = os.NewSyscallError("recvmsg", err)
	}
	if rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	}
	if n == 0 {
		if c.fin.Load() == 0 {
			c.fin.Store(finArrived(c.rc))
		}
		return 0, io.EOF
	}
	if ts, ok := rxStamp(c.oob[:oobn]); ok {
		c.last.Store(ts)
	}
	return n, nil
}

// rxStamp finds the SO_TIMESTAMPNS stamp among control messages.
func rxStamp(oob []byte) (int64, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			return (*syscall.Timespec)(unsafe.Pointer(&m.Data[0])).Nano(), true
		}
	}
	return 0, false
}
