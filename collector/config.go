package collector

import (
	"context"
	"crypto/x509"
	"errors"
	"net/netip"
	"time"
)

// LookupFunc resolves a host name to addresses (the node passes its caching
// resolver's Lookup).
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Config configures a Collector. Zero values mean the defaults named on each
// field; UserAgent and Lookup are required.
type Config struct {
	// UserAgent is the operator's User-Agent, with a contact URL. It is the
	// only identification sent, with From when set.
	UserAgent string
	From      string

	// Lookup resolves host names; IP literals are dialled as they are.
	Lookup LookupFunc

	// RootCAs verifies servers' certificates (default: the system pool).
	// ExtraCAs are trusted besides (tests add the test web's CA).
	RootCAs  *x509.CertPool
	ExtraCAs []*x509.Certificate

	Fetchers int // lists fetched at once (default 300)
	Pipeline int // pipelining depth; 1 (the default) is off

	ConnectTimeout  time.Duration // TCP connect, per address tried (default 10 s)
	TLSTimeout      time.Duration // TLS handshake (default 10 s)
	FirstByte       time.Duration // from a request's turn to its response's first byte (default 30 s)
	ResponseTimeout time.Duration // whole response, from its turn (default 60 s)
	IdleRead        time.Duration // between two reads of one response (default 20 s)
	Linger          time.Duration // drain of a connection we gave up on (default 2 s)
	ReconnectGap    time.Duration // between a list's connections (default 50 ms)
	// KeepIdle is how long a list's connection, healthy at its end, is
	// kept for the next list of its origin (idle.go; Collector.CloseIdle
	// closes them); 0: closed at the end of each list.
	KeepIdle time.Duration
	// KeepPerAddr: a list about to dial an address first closes the
	// connections kept there for other hosts (idle.go), so that kept
	// connections never add to an address's connections; for a
	// scheduler that limits the hosts of one address fetching at once.
	KeepPerAddr bool

	MaxHeader   int   // status line and header block (default 64 KiB)
	MaxBody     int64 // body, on the wire and decoded (default 10 MiB)
	MaxAttempts int   // sends of a request that got no response (default 3)
	MaxInterim  int   // 1xx responses skipped before the final one (default 8)

	// PoolBytes bounds the buffers kept for reuse, which are also never more
	// than the most that were out at once (default 16 MiB: 64 made a
	// one-host crawl's peak RSS 1.2x as large, at the same CPU per page).
	PoolBytes int64

	// NoPipelineHosts bounds the no-pipelining list (default 65536).
	NoPipelineHosts int
}

// Defaults, exported for the documentation of commands.
const (
	DefaultFetchers  = 300
	DefaultMaxHeader = 64 << 10
	DefaultMaxBody   = 10 << 20
)

func (c *Config) setDefaults() error {
	if c.UserAgent == "" {
		return errors.New("collector: Config.UserAgent is required (the operator's, with a contact URL)")
	}
	if c.Lookup == nil {
		return errors.New("collector: Config.Lookup is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt(&c.Fetchers, DefaultFetchers)
	defInt(&c.Pipeline, 1)
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.TLSTimeout, 10*time.Second)
	def(&c.FirstByte, 30*time.Second)
	def(&c.ResponseTimeout, 60*time.Second)
	def(&c.IdleRead, 20*time.Second)
	def(&c.Linger, 2*time.Second)
	def(&c.ReconnectGap, 50*time.Millisecond)
	defInt(&c.MaxHeader, DefaultMaxHeader)
	if c.MaxHeader < 1024 {
		c.MaxHeader = 1024
	}
	if c.MaxBody <= 0 {
		c.MaxBody = DefaultMaxBody
	}
	defInt(&c.MaxAttempts, 3)
	defInt(&c.MaxInterim, 8)
	defInt(&c.NoPipelineHosts, 65536)
	if c.PoolBytes <= 0 {
		c.PoolBytes = 16 << 20
	}
	return nil
}
