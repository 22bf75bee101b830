package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// errNoProc: the tables are not there (not Linux, /proc not mounted), so
// who serves a connection cannot be told.
var errNoProc = errors.New("no /proc/net/tcp")

// checkServerOwner checks that the far end of conn, when it is a socket
// of this machine, belongs to uid (the owner of the node's STATUS_TOKEN)
// or to root, who may read the token file anyway (a port forwarder such
// as docker-proxy in front of a node in a container): whatever listens on
// the address is sent the token, and with the node stopped, or listening
// elsewhere than ctl was told, another user's process may hold the port
// and would read the token, and drive the node with it from then on. A far
// end not in the tables (another machine, or a socket closed already,
// which reads nothing more) passes, as does any connection where /proc is
// missing.
func checkServerOwner(conn net.Conn, uid uint32) error {
	local, lok := conn.LocalAddr().(*net.TCPAddr)
	remote, rok := conn.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return nil
	}
	owner, found, err := socketOwner(remote.AddrPort(), local.AddrPort())
	if errors.Is(err, errNoProc) || err == nil && !found {
		return nil
	}
	if err != nil {
		return fmt.Errorf("telling who serves %s: %w", remote, err)
	}
	if owner != uid && owner != 0 {
		return &foreignServerError{addr: remote.String(), owner: owner, uid: uid}
	}
	return nil
}

// foreignServerError: the server ctl reached is another user's.
type foreignServerError struct {
	addr       string
	owner, uid uint32
}

func (e *foreignServerError) Error() string {
	return fmt.Sprintf("%s is served by a process of uid %d, not of uid %d, who owns the control token: another user's, not the node's (is the node running, and on this address?); the token was not sent",
		e.addr, e.owner, e.uid)
}

// socketOwner finds the socket whose local address is local and whose
// peer is peer in /proc/net/tcp{,6} and returns its uid.
func socketOwner(local, peer netip.AddrPort) (uid uint32, found bool, err error) {
	// A socket of either family may hold an IPv4 address, in 4 bytes or
	// mapped into 16: both spellings are looked for.
	unmap := func(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
	local, peer = unmap(local), unmap(peer)
	want := [][2]string{{procAddr(local), procAddr(peer)}}
	if local.Addr().Is4() && peer.Addr().Is4() {
		// A socket listening on IPv6 takes IPv4 connections as mapped
		// addresses and is listed in tcp6 (and a client may dial so).
		m := func(a netip.AddrPort) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom16(a.Addr().As16()), a.Port())
		}
		want = append(want, [2]string{procAddr(m(local)), procAddr(m(peer))})
	}
	// The kernel's tables of this network namespace's TCP sockets, with
	// the uid owning each.
	procTCP := [...]string{"/proc/net/tcp", "/proc/net/tcp6"}
	missing := 0
	for _, path := range procTCP {
		uid, found, err := scanProcTCP(path, want)
		if errors.Is(err, fs.ErrNotExist) {
			missing++
			continue
		}
		if err != nil || found {
			return uid, found, err
		}
	}
	if missing == len(procTCP) {
		return 0, false, errNoProc
	}
	return 0, false, nil
}

// scanProcTCP looks in one table for a row with one of the address pairs.
func scanProcTCP(path string, want [][2]string) (uint32, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if line == 1 || len(fields) < 8 {
			continue
		}
		for _, w := range want {
			if !strings.EqualFold(fields[1], w[0]) || !strings.EqualFold(fields[2], w[1]) {
				continue
			}
			uid, err := strconv.ParseUint(fields[7], 10, 32)
			if err != nil {
				return 0, false, fmt.Errorf("%s:%d: uid %q is not a number", path, line, fields[7])
			}
			return uint32(uid), true, nil
		}
	}
	return 0, false, sc.Err()
}

// procAddr writes an address as /proc/net/tcp does: the address's 32-bit
// words in the machine's byte order, in hex, then ':' and the port.
func procAddr(ap netip.AddrPort) string {
	var b strings.Builder
	raw := ap.Addr().AsSlice()
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}

// fileOwner is the uid owning path.
func fileOwner(path string) (uint32, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no owner known", path)
	}
	return st.Uid, nil
}
