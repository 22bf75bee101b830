package collector

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Collector is a pool of fetchers. It is safe for concurrent use: the node
// calls Fetch from as many goroutines as it likes, and at most
// Config.Fetchers lists are fetched at once.
type Collector struct {
	cfg Config
	// tls is made on the first TLS dial (tlsConfig), not by New: with
	// ExtraCAs it used to copy the system's roots, 50 ms and 1,300 page
	// faults of every process's start, also of one that never dials TLS.
	tlsOnce sync.Once
	tls     *tls.Config
	extra   *x509.CertPool // ExtraCAs to verify with first (newTLSConfig), or nil
	free    chan struct{}  // one token per fetcher slot
	idleMu  sync.Mutex
	idle    []*fetcher // fetchers' states made so far and free, the last used on top
	bufs    bufPool
	nopipe  hostSet
	kept    idleConns // connections between lists (Config.KeepIdle)

	dialRaw func(ctx context.Context) (net.Conn, error) // tests: replaces lookup and dial
	// beforeRequest, for tests, runs before each request is written: a
	// fetcher that stalls there (descheduled on a loaded machine).
	beforeRequest func()
}

// New returns a collector for cfg.
func New(cfg Config) (*Collector, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	c := &Collector{
		cfg:    cfg,
		free:   make(chan struct{}, cfg.Fetchers),
		nopipe: hostSet{max: cfg.NoPipelineHosts, set: map[string]struct{}{}},
		bufs:   bufPool{max: cfg.PoolBytes},
	}
	for range cfg.Fetchers {
		c.free <- struct{}{} // a fetcher's state is made on first use
	}
	return c, nil
}

// newTLSConfig is the collector's TLS configuration for cfg, and the
// pool of cfg.ExtraCAs that tlsConfig verifies with (verifyEither) when
// there are no RootCAs (nil otherwise).
func newTLSConfig(cfg Config) (*tls.Config, *x509.CertPool) {
	t := &tls.Config{
		RootCAs:    cfg.RootCAs,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}, // never h2: we speak HTTP/1.1 only
		// Classic key exchanges only: the default hybrid post-quantum
		// one (X25519MLKEM768) doubled the client's handshake CPU,
		// 5 % of a crawl of an https web, to protect pages that are
		// public and stored in the clear anyway.
		CurvePreferences:   []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384},
		ClientSessionCache: tls.NewLRUClientSessionCache(4096),
	}
	if len(cfg.ExtraCAs) == 0 {
		return t, nil
	}
	extra := x509.NewCertPool()
	for _, c := range cfg.ExtraCAs {
		extra.AddCert(c)
	}
	if cfg.RootCAs != nil {
		t.RootCAs = cfg.RootCAs.Clone()
		for _, c := range cfg.ExtraCAs {
			t.RootCAs.AddCert(c)
		}
		return t, nil
	}
	// The system's roots and the extra CAs: a chain is trusted if it
	// verifies to either (a root ends a chain, so this is their union).
	// The extra CAs are tried first and the system's roots loaded only
	// for a certificate they do not sign: copying the system's roots
	// into one pool was 40 ms of every process that dials TLS once (a
	// cluster node crawling a test web). The standard verification is
	// replaced by the same one (name, chain, time, server auth) in
	// VerifyConnection, which also runs on resumed sessions; tlsConfig
	// sets it with the host's name (this one refuses: no name).
	t.InsecureSkipVerify = true
	t.VerifyConnection = func(tls.ConnectionState) error { return errors.New("tls: no host name to verify") }
	return t, extra
}

// verifyEither verifies the server's chain and its name against the
// extra CAs, then against the system's roots. name is the host's (the
// connection state's ServerName is the SNI, empty for an IP address).
func verifyEither(cs tls.ConnectionState, name string, extra *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	opts := x509.VerifyOptions{DNSName: name, Roots: extra, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err == nil {
		return nil
	}
	opts.Roots = nil // the system's
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: failed to verify certificate: %w", err)
	}
	return nil
}

func (c *Collector) tlsConfig(host string) *tls.Config {
	c.tlsOnce.Do(func() { c.tls, c.extra = newTLSConfig(c.cfg) })
	t := c.tls.Clone()
	t.ServerName = host
	if extra := c.extra; extra != nil {
		t.VerifyConnection = func(cs tls.ConnectionState) error { return verifyEither(cs, host, extra) }
	}
	return t
}

// Fetch fetches list on one of the pool's fetchers, waiting for one to be
// free, and returns one result per request in list order. Cancelling ctx
// cuts the list short: the response being read ends Canceled and the URLs
// not yet answered come back NotTried.
func (c *Collector) Fetch(ctx context.Context, l *List) *Batch {
	b := &Batch{Results: make([]Result, len(l.Requests))}
	for i, rq := range l.Requests {
		b.Results[i] = Result{ID: rq.ID, URL: rq.URL, Kind: NotTried, ContentLength: -1}
	}
	if l.Robots {
		b.Robots = &Result{Kind: NotTried, ContentLength: -1}
	}
	select {
	case <-c.free:
	case <-ctx.Done():
		return b
	}
	// The state used last is taken first: a node fetching a few lists at
	// a time keeps a few warm states instead of cycling through (and
	// making) one per slot, each holding its readers and decoders (a
	// one-host crawl with 300 slots grew all 300).
	c.idleMu.Lock()
	var f *fetcher
	if n := len(c.idle); n > 0 {
		f, c.idle = c.idle[n-1], c.idle[:n-1]
	}
	c.idleMu.Unlock()
	if f == nil {
		f = &fetcher{col: c, hdr: http.Header{"User-Agent": {c.cfg.UserAgent}, "Accept-Encoding": {acceptEncoding}}}
		if c.cfg.From != "" {
			f.hdr["From"] = []string{c.cfg.From}
		}
	}
	defer func() {
		c.idleMu.Lock()
		c.idle = append(c.idle, f)
		c.idleMu.Unlock()
		c.free <- struct{}{}
	}()
	f.run(ctx, l, b)
	return b
}

// ReleaseResult returns one result's buffers to the pool (from List.Each,
// say, once the page is stored), as Release does; Release of its batch
// then skips it.
func (c *Collector) ReleaseResult(r *Result) { r.release(&c.bufs) }

// PoolLent returns the bytes of the pool's buffers that results hold now
// (taken and not given back) and the most they ever held at once. A
// caller releasing each result in List.Each holds about one response per
// fetcher; one releasing whole batches, every body of its lists.
func (c *Collector) PoolLent() (now, most int64) {
	c.bufs.mu.Lock()
	defer c.bufs.mu.Unlock()
	return c.bufs.lent, c.bufs.lentMax
}

// NoPipeline reports whether origin (scheme://host:port) is on the
// no-pipelining list.
func (c *Collector) NoPipeline(origin string) bool { return c.nopipe.has(origin) }

// Release returns the batch's buffers to the pool; its results' Head,
// WireBody and Body must not be used afterwards, and their Header is nil.
func (c *Collector) Release(b *Batch) {
	for i := range b.Results {
		b.Results[i].release(&c.bufs)
	}
	if b.Robots != nil {
		b.Robots.release(&c.bufs)
	}
}

// hostSet is the bounded no-pipelining list; the oldest entry goes first.
type hostSet struct {
	mu   sync.Mutex
	max  int
	set  map[string]struct{}
	fifo []string
}

func (s *hostSet) has(k string) bool {
	s.mu.Lock()
	_, ok := s.set[k]
	s.mu.Unlock()
	return ok
}

func (s *hostSet) add(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[k]; ok {
		return
	}
	if len(s.fifo) >= s.max {
		delete(s.set, s.fifo[0])
		s.fifo = s.fifo[1:]
	}
	s.set[k] = struct{}{}
	s.fifo = append(s.fifo, k)
}

// fetcher is one worker's reusable state.
type fetcher struct {
	col       *Collector
	ctx       context.Context
	each      func(*Result)
	linger    bool                 // List.Linger of the list running
	stop      <-chan struct{}      // List.Stop of the list running
	after     func(*Result) []bool // List.AfterRobots of the list running
	robots    *Result              // the robots.txt result while not final; nil otherwise
	robotsMax int64                // List.RobotsMaxBody
	skipped   bool                 // AfterRobots marked items that are still pending
	hdr       http.Header
	br        *bufio.Reader // small (smallReader bytes)
	brBig     *bufio.Reader // Config.MaxHeader bytes, for long heads
	pre       prefixReader
	bw        *bufio.Writer
	cw        countWriter
	dec       decoders
	addrs     []netip.Addr
	items     []item
	pending   []int
	out       []exchange
	reqs      []http.Request
	lastClose time.Time
	reads     int // read calls on the list's connections
	writes    int
}

func (f *fetcher) reader(w *wireReader) *bufio.Reader {
	if f.br == nil {
		f.br = bufio.NewReaderSize(w, min(smallReader, f.col.cfg.MaxHeader))
	} else {
		f.br.Reset(w)
	}
	return f.br
}

func (f *fetcher) writer(c interface{ Write([]byte) (int, error) }, cutoff time.Time) *bufio.Writer {
	f.cw = countWriter{w: c, cutoff: cutoff}
	if f.bw == nil {
		f.bw = bufio.NewWriterSize(&f.cw, 8<<10)
	} else {
		f.bw.Reset(&f.cw)
	}
	return f.bw
}

// countWriter counts the bytes written to a connection, and writes none
// at or past cutoff (zero: no cutoff).
type countWriter struct {
	w      interface{ Write([]byte) (int, error) }
	n      int64
	writes int
	// cutoff is the list's deadline: a cluster node's slot closing guard,
	// past which another node may fetch from the host. fetchAll looks at
	// it before it builds each request, but a fetcher stalled between
	// that and the write (11 ms seen) sent requests past it; here it is
	// looked at last, just before the bytes go to the connection.
	cutoff time.Time
}

// errPastCutoff is a write refused at or past the list's deadline.
var errPastCutoff = errors.New("the list's deadline passed: nothing more is sent")

func (c *countWriter) Write(p []byte) (int, error) {
	if !c.cutoff.IsZero() && !time.Now().Before(c.cutoff) {
		return 0, errPastCutoff
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.writes++
	return n, err
}
