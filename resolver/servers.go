package resolver

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync/atomic"

	"github.com/miekg/dns"
)

// server is one name server and when it may be used again after it stopped
// answering (Unix nanoseconds of the resolver's clock; 0 when it is up).
type server struct {
	addr       netip.AddrPort
	downUntil  atomic.Int64
	lastAnswer atomic.Int64 // when the server last answered anything
}

// usable reports whether a query may go to s at time now. A server whose
// down time has passed is handed to exactly one caller, as a probe: the
// claim pushes its down time forward so that concurrent queries keep
// skipping it until the probe has answered (markUp) or timed out.
func (s *server) usable(now int64, downFor int64) bool {
	d := s.downUntil.Load()
	if d == 0 {
		return true
	}
	if now < d {
		return false
	}
	return s.downUntil.CompareAndSwap(d, now+downFor)
}

func (s *server) markDown(now int64, downFor int64) { s.downUntil.Store(now + downFor) }
func (s *server) markUp()                           { s.downUntil.Store(0) }

// Down reports whether the server is currently marked down.
func (s *server) down(now int64) bool { d := s.downUntil.Load(); return d != 0 && now < d }

// parseServer accepts "ip", "ip:port" and "[ipv6]:port"; the port defaults
// to 53. Names are refused: resolving the resolver's servers would need a
// resolver. Port 0 is refused too: no server listens there, and every
// query would fail with a send error that does not name the cause.
func parseServer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("resolver: server %q has port 0", s)
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a.Unmap(), 53), nil
	}
	return netip.AddrPort{}, fmt.Errorf("resolver: server %q is not an IP address with an optional port", s)
}

// systemServers reads the name servers of a resolv.conf file.
func systemServers(path string) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("resolver: reading %s: %w", path, err)
	}
	var out []string
	for _, s := range cc.Servers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue // e.g. a scoped address we cannot use
		}
		port, _ := strconv.Atoi(cc.Port)
		if port == 0 {
			port = 53
		}
		out = append(out, netip.AddrPortFrom(a, uint16(port)).String())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resolver: %s names no usable name server", path)
	}
	return out, nil
}
