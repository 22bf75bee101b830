// Package ntptest provides NTP servers on loopback for tests: an in-process
// responder whose clock is off by a chosen amount, and a real chronyd.
package ntptest

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ntpEpochOffset is the number of seconds from 1900-01-01 (NTP era 0) to
// 1970-01-01 (Unix).
const ntpEpochOffset = 2208988800

// Server is a minimal NTPv4 server on a loopback UDP port that answers
// every request with its own clock shifted by Offset. Its behaviour can be
// changed while it runs.
type Server struct {
	Addr string // "127.0.0.1:port"

	conn    net.PacketConn
	offset  atomic.Int64 // time.Duration
	stratum atomic.Uint32
	delay   atomic.Int64 // time.Duration before answering
	leap    atomic.Uint32
	silent  atomic.Bool
	answers atomic.Int64
	wg      sync.WaitGroup
}

// NewServer starts a responder that lies by offset at stratum 2; it stops
// when the test ends.
func NewServer(t testing.TB, offset time.Duration) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: conn.LocalAddr().String(), conn: conn}
	s.offset.Store(int64(offset))
	s.stratum.Store(2)
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { conn.Close(); s.wg.Wait() })
	return s
}

// SetOffset changes how far the server's clock is off.
func (s *Server) SetOffset(d time.Duration) { s.offset.Store(int64(d)) }

// SetStratum changes the advertised stratum (0 is a kiss-of-death).
func (s *Server) SetStratum(n uint8) { s.stratum.Store(uint32(n)) }

// SetDelay makes the server wait d before answering (a long round trip).
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// SetUnsynchronized makes the server announce leap indicator 3 (clock not
// synchronised), which ntp.Response.Validate rejects.
func (s *Server) SetUnsynchronized(b bool) {
	v := uint32(0)
	if b {
		v = 3
	}
	s.leap.Store(v)
}

// SetSilent makes the server drop requests (a dead server).
func (s *Server) SetSilent(b bool) { s.silent.Store(b) }

// Answers counts the replies sent.
func (s *Server) Answers() int64 { return s.answers.Load() }

func (s *Server) serve() {
	defer s.wg.Done()
	buf := make([]byte, 512)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if n < 48 || buf[0]&7 != 3 || s.silent.Load() { // not a client request
			continue
		}
		// The delay comes before the receive stamp, so that it counts as
		// network round trip, not as server processing time.
		if d := time.Duration(s.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		recv := time.Now().Add(time.Duration(s.offset.Load()))
		var resp [48]byte
		version := buf[0] >> 3 & 7
		resp[0] = byte(s.leap.Load())<<6 | version<<3 | 4 // server mode
		resp[1] = byte(s.stratum.Load())
		resp[2] = 6                                                        // poll 64 s
		resp[3] = 0xec                                                     // precision 2^-20 s
		binary.BigEndian.PutUint32(resp[4:], 1<<16/100)                    // root delay 10 ms
		binary.BigEndian.PutUint32(resp[8:], 1<<16/100)                    // root dispersion 10 ms
		copy(resp[12:16], "KSPD")                                          // reference id
		putTime(resp[16:], recv.Add(-time.Second))                         // reference time
		copy(resp[24:32], buf[40:48])                                      // origin = client's transmit
		putTime(resp[32:], recv)                                           // receive
		putTime(resp[40:], time.Now().Add(time.Duration(s.offset.Load()))) // transmit
		if _, err := s.conn.WriteTo(resp[:], from); err == nil {
			s.answers.Add(1)
		}
	}
}

// putTime writes t as a 64-bit NTP timestamp (era 0).
func putTime(b []byte, t time.Time) {
	sec := uint64(t.Unix() + ntpEpochOffset)
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	binary.BigEndian.PutUint64(b, sec<<32|frac)
}
