package resolver

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// ednsSize is the UDP payload size we advertise: the DNS flag day 2020
// value, small enough not to fragment, large enough for most answers.
const ednsSize = 1232

// errTimeout is returned when a server did not answer within the timeout.
var errTimeout = errors.New("timed out")

// transport multiplexes queries over a small pool of UDP sockets and falls
// back to TCP for truncated answers.
type transport struct {
	socks   []*udpSocket
	next    atomic.Uint32
	timeout time.Duration
	stats   *counters
	wg      sync.WaitGroup
}

// udpSocket is one UDP socket, its pending queries by id, and the id
// generator.
type udpSocket struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	pending map[uint16]*pendingQuery
	ids     *rand.Rand
}

// pendingQuery is a query sent and not yet answered. Only a reply from
// server, with the query's id and question, is accepted for it.
type pendingQuery struct {
	server netip.AddrPort
	qname  string // fully qualified, lower case
	qtype  uint16
	reply  chan *dns.Msg // buffered 1; receives at most one message
}

// newTransport opens n UDP sockets on kernel-chosen ports. When every server
// is on loopback the sockets are bound to loopback too.
func newTransport(n int, servers []netip.AddrPort, timeout time.Duration, stats *counters) (*transport, error) {
	local := &net.UDPAddr{}
	allLoop4 := len(servers) > 0
	for _, s := range servers {
		if !s.Addr().Unmap().Is4() || !s.Addr().IsLoopback() {
			allLoop4 = false
		}
	}
	network := "udp"
	if allLoop4 {
		network, local = "udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	}
	t := &transport{timeout: timeout, stats: stats}
	for range n {
		conn, err := net.ListenUDP(network, local)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("resolver: opening a UDP socket: %w", err)
		}
		var seed [32]byte
		if _, err := crand.Read(seed[:]); err != nil {
			conn.Close()
			t.close()
			return nil, fmt.Errorf("resolver: seeding query ids: %w", err)
		}
		s := &udpSocket{conn: conn, pending: make(map[uint16]*pendingQuery), ids: rand.New(rand.NewChaCha8(seed))}
		t.socks = append(t.socks, s)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.readLoop(s)
		}()
	}
	return t, nil
}

func (t *transport) close() {
	for _, s := range t.socks {
		s.conn.Close()
	}
	t.wg.Wait()
}

// readLoop delivers each acceptable reply on s to its pending query and
// drops everything else.
func (t *transport) readLoop(s *udpSocket) {
	buf := make([]byte, 65536)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// E.g. an ICMP error surfaced on the socket. Pause briefly so
			// that an error that repeats cannot spin the loop.
			time.Sleep(time.Millisecond)
			continue
		}
		t.deliver(s, buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
	}
}

// deliver checks one datagram against the pending queries of s.
func (t *transport) deliver(s *udpSocket, b []byte, from netip.AddrPort) {
	if len(b) < 12 {
		t.stats.RejectedMalformed.Add(1)
		return
	}
	id := uint16(b[0])<<8 | uint16(b[1])
	s.mu.Lock()
	p := s.pending[id]
	s.mu.Unlock()
	if p == nil {
		t.stats.RejectedUnsolicited.Add(1)
		return
	}
	if from != p.server {
		t.stats.RejectedSource.Add(1)
		return
	}
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		// RFC 1035 lets a server cut a long UDP answer anywhere, in the
		// middle of a record, and set TC. Its header and question still
		// say which query it answers, and TCP brings the whole answer;
		// refused as malformed, it left the query to time out and the
		// server marked down.
		if !m.Truncated || len(m.Question) != 1 {
			t.stats.RejectedMalformed.Add(1)
			return
		}
		m.Answer, m.Ns, m.Extra = nil, nil, nil
	}
	if !matches(m, p.qname, p.qtype) && !questionlessError(m) {
		t.stats.RejectedQuestion.Add(1)
		return
	}
	s.mu.Lock()
	if s.pending[id] != p { // answered meanwhile, or gave up
		s.mu.Unlock()
		return
	}
	delete(s.pending, id)
	s.mu.Unlock()
	p.reply <- m
}

// matches reports whether m is a response to a standard query for
// qname/qtype in class IN.
func matches(m *dns.Msg, qname string, qtype uint16) bool {
	if !m.Response || m.Opcode != dns.OpcodeQuery || len(m.Question) != 1 {
		return false
	}
	q := m.Question[0]
	return q.Qtype == qtype && q.Qclass == dns.ClassINET && strings.EqualFold(q.Name, qname)
}

// questionlessError reports whether m is an error reply without its
// question, as some servers send REFUSED or SERVFAIL (RFC 1035 does not
// require the question in a reply). From the server, with the query's id,
// it is the answer: refused, the query waited out its timeout and the
// server, which answers, was marked down. It cannot be taken for an
// answer, only for that server's failure, which the question would not
// make harder to forge: whoever can forge the id can copy the question.
func questionlessError(m *dns.Msg) bool {
	return m.Response && m.Opcode == dns.OpcodeQuery && len(m.Question) == 0 &&
		m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError
}

// exchange asks server for qname/qtype (qname fully qualified, lower case)
// and returns a reply that matches the question. A truncated UDP reply is
// retried over TCP.
func (t *transport) exchange(ctx context.Context, server netip.AddrPort, qname string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(qname, qtype)
	q.RecursionDesired = true
	q.SetEdns0(ednsSize, false)

	p := &pendingQuery{server: server, qname: qname, qtype: qtype, reply: make(chan *dns.Msg, 1)}
	s, id, ok := t.register(p)
	if !ok {
		return nil, fmt.Errorf("%w: %d on each of %d sockets", errBusy, maxPending, len(t.socks))
	}
	forget := func() {
		s.mu.Lock()
		if s.pending[id] == p {
			delete(s.pending, id)
		}
		s.mu.Unlock()
	}
	q.Id = id
	wire, err := q.Pack()
	if err != nil {
		forget()
		return nil, fmt.Errorf("packing query for %s: %w", qname, err)
	}
	t.stats.Queries.Add(1)
	if _, err := s.conn.WriteToUDPAddrPort(wire, server); err != nil {
		forget()
		return nil, fmt.Errorf("sending to %s: %w", server, err)
	}
	timer := time.NewTimer(t.timeout)
	defer timer.Stop()
	var m *dns.Msg
	select {
	case m = <-p.reply:
	case <-timer.C:
		forget()
		t.stats.Timeouts.Add(1)
		return nil, fmt.Errorf("%s: %w after %v", server, errTimeout, t.timeout)
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
	if !m.Truncated {
		return m, nil
	}
	t.stats.TCPFallbacks.Add(1)
	return t.exchangeTCP(ctx, server, q)
}

// maxPending bounds the queries one socket has in flight. A query's id is
// drawn at random until a free one comes up, under the socket's lock:
// with all 65,536 taken (a flood of lookups against a silent server) the
// draw never ended, and every lookup through the socket hung behind it.
// Half the id space keeps a draw to two tries on average.
const maxPending = 1 << 15

// errBusy is returned when every socket has maxPending queries in flight.
var errBusy = errors.New("too many queries in flight")

// register gives p a free id on a socket with room, trying each socket
// once from the next in turn; ok is false when none has room.
func (t *transport) register(p *pendingQuery) (s *udpSocket, id uint16, ok bool) {
	first := int(t.next.Add(1))
	for i := range t.socks {
		s = t.socks[(first+i)%len(t.socks)]
		s.mu.Lock()
		if len(s.pending) >= maxPending {
			s.mu.Unlock()
			continue
		}
		id = uint16(s.ids.Uint32())
		for s.pending[id] != nil {
			id = uint16(s.ids.Uint32())
		}
		s.pending[id] = p
		s.mu.Unlock()
		return s, id, true
	}
	return nil, 0, false
}

// exchangeTCP repeats q over TCP, for answers too large for UDP.
func (t *transport) exchangeTCP(ctx context.Context, server netip.AddrPort, q *dns.Msg) (*dns.Msg, error) {
	c := &dns.Client{Net: "tcp", Timeout: t.timeout}
	m, _, err := c.ExchangeContext(ctx, q, server.String())
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			// Not errTimeout: the server answered over UDP, truncated, so
			// it is alive; marked down, it would fail every other name
			// (ErrAllDown) for DownFor because one answer is too large
			// for UDP and TCP to it is blocked.
			t.stats.Timeouts.Add(1)
			return nil, fmt.Errorf("%s over TCP, after a truncated UDP reply: timed out after %v", server, t.timeout)
		}
		return nil, fmt.Errorf("%s over TCP: %w", server, err)
	}
	if m.Id != q.Id || !matches(m, q.Question[0].Name, q.Question[0].Qtype) {
		t.stats.RejectedQuestion.Add(1)
		return nil, fmt.Errorf("%s over TCP: reply does not match the query for %s", server, q.Question[0].Name)
	}
	return m, nil
}
