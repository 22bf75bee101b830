package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/urlnorm"
)

// fetchLine is one URL's line of `kspider fetch --json`.
type fetchLine struct {
	URL         string  `json:"url"`
	Status      int     `json:"status"`
	Kind        string  `json:"kind,omitempty"`
	Error       string  `json:"error,omitempty"`
	Bytes       int     `json:"bytes"`      // decoded body
	WireBody    int     `json:"wire_body"`  // body as received (content-coded)
	WireBytes   int64   `json:"wire_bytes"` // request and response on the connection
	Truncated   bool    `json:"truncated,omitempty"`
	Short       bool    `json:"short,omitempty"`
	ContentType string  `json:"content_type,omitempty"`
	Location    string  `json:"location,omitempty"`
	RetryAfter  string  `json:"retry_after,omitempty"`
	Conn        int     `json:"conn"` // which of the host's connections served it
	Pipelined   bool    `json:"pipelined,omitempty"`
	Attempts    int     `json:"attempts"`
	Addr        string  `json:"addr,omitempty"`
	DNSMs       float64 `json:"dns_ms"`
	ConnectMs   float64 `json:"connect_ms"`
	TLSMs       float64 `json:"tls_ms"`
	FirstByteMs float64 `json:"first_byte_ms"`
	TotalMs     float64 `json:"total_ms"`
	BodyFile    string  `json:"body_file,omitempty"`
}

func runFetch(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "fetch", "fetch [--pipeline N] [--head] [--max-body N] [--server DNS] [--ca FILE] [--json] [--body DIR] URL...",
		`Fetches URLs through the collector: grouped by host, one connection per
host (hosts in parallel), pipelined when --pipeline is above 1 and the host
allows it, never following redirects. Prints one line per URL in the order
given: URL, status, error kind ("-" for none), body bytes, bytes on the
wire, and timings (dns, connect, tls, first byte, total), the connection
number and "pipelined". --json prints JSON lines instead. --body DIR writes
each decoded body to DIR/N.body (N: the URL's position, from 1).

Names are resolved with kspider's resolver, at --server or the servers of
/etc/resolv.conf. The exit status is 1 when any URL failed (a kind other
than none; an HTTP error status is a result, not a failure).`)
	var servers serverList
	fs.Var(&servers, "server", "name server `ADDR` (ip or ip:port); repeatable")
	pipeline := fs.Int("pipeline", 1, "pipelining depth (1: off)")
	head := fs.Bool("head", false, "HEAD instead of GET")
	maxBody := fs.Int64("max-body", collector.DefaultMaxBody, "body cap in `bytes` (pages over it are kept truncated)")
	caFile := fs.String("ca", "", "PEM `FILE` of a CA to trust besides the system's")
	asJSON := fs.Bool("json", false, "print JSON lines")
	bodyDir := fs.String("body", "", "write decoded bodies to `DIR`")
	ua := fs.String("user-agent", spider.DefaultUserAgent, "User-Agent (the operator's, with a contact URL)")
	from := fs.String("from", "", "From header (the operator's e-mail), sent when set")
	robots := fs.Bool("robots", false, "fetch each host's /robots.txt first, on the same connection, and print it as a line too")
	network := fs.String("network", "ip", "address families to resolve: ip4, ip6 or ip")
	timeout := fs.Duration("timeout", 30*time.Second, "first-byte timeout; the whole response gets twice as long")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	urls := fs.Args()
	if len(urls) == 0 {
		return usagef("no URLs given")
	}
	if *pipeline < 1 || *pipeline > 64 {
		return usagef("--pipeline must be 1..64")
	}
	if *maxBody <= 0 {
		return usagef("--max-body must be positive")
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	if *timeout > math.MaxInt64/2 {
		// The whole response gets twice as long, which would wrap negative.
		return usagef("--timeout %v is over %v", *timeout, time.Duration(math.MaxInt64/2))
	}
	switch *network {
	case "ip", "ip4", "ip6":
	default:
		return usagef("--network %q is not ip, ip4 or ip6", *network)
	}
	// Group by origin, keeping the order of first appearance.
	type group struct {
		list  collector.List
		batch *collector.Batch
	}
	var groups []*group
	byOrigin := map[string]*group{}
	for i, raw := range urls {
		raw, key, err := fetchTarget(raw)
		if err != nil {
			return usagef("%q %v", urls[i], err)
		}
		g := byOrigin[key]
		if g == nil {
			g = &group{list: collector.List{Robots: *robots}}
			byOrigin[key] = g
			groups = append(groups, g)
		}
		g.list.Requests = append(g.list.Requests, collector.Request{ID: uint64(i), URL: raw, Head: *head})
	}
	var extra []*x509.Certificate
	if *caFile != "" {
		var err error
		if extra, err = readCAFile(*caFile); err != nil {
			return err
		}
	}
	if *bodyDir != "" {
		if err := os.MkdirAll(*bodyDir, 0o755); err != nil {
			return err
		}
	}
	res, err := resolver.New(resolver.Config{Servers: servers, Network: *network})
	if err != nil {
		return err
	}
	defer res.Close()
	col, err := collector.New(collector.Config{
		UserAgent: *ua, From: *from, ExtraCAs: extra, Pipeline: *pipeline, MaxBody: *maxBody,
		FirstByte: *timeout, ResponseTimeout: 2 * *timeout,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) },
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { g.batch = col.Fetch(ctx, &g.list) })
	}
	wg.Wait()

	lines := make([]*collector.Result, len(urls))
	var robotsLines []*collector.Result
	for _, g := range groups {
		for i := range g.batch.Results {
			r := &g.batch.Results[i]
			lines[r.ID] = r
		}
		if g.batch.Robots != nil {
			robotsLines = append(robotsLines, g.batch.Robots)
		}
	}
	enc := json.NewEncoder(e.stdout)
	failed := 0
	print := func(r *collector.Result, n int) error {
		l := fetchLine{URL: r.URL, Status: r.Status, Kind: r.Kind.String(), Bytes: len(r.Body), WireBody: len(r.WireBody),
			WireBytes: r.WireBytes, Truncated: r.Truncated, Short: r.Short, ContentType: r.ContentType, Location: r.Location,
			RetryAfter: r.RetryAfter, Conn: r.Conn, Pipelined: r.Pipelined, Attempts: r.Attempts,
			DNSMs: ms(r.Timings.DNS), ConnectMs: ms(r.Timings.Connect), TLSMs: ms(r.Timings.TLS),
			FirstByteMs: ms(r.Timings.FirstByte), TotalMs: ms(r.Timings.Total)}
		if r.Err != nil {
			l.Error = r.Err.Error()
		}
		if r.Addr.IsValid() {
			l.Addr = r.Addr.String()
		}
		if *bodyDir != "" && n > 0 && r.Status != 0 {
			l.BodyFile = filepath.Join(*bodyDir, strconv.Itoa(n)+".body")
			if err := os.WriteFile(l.BodyFile, r.Body, 0o644); err != nil {
				return err
			}
		}
		if *asJSON {
			return enc.Encode(l)
		}
		kind := l.Kind
		if kind == "" {
			kind = "-"
		}
		p := ""
		if r.Pipelined {
			p = "\tpipelined"
		}
		_, err := fmt.Fprintf(e.stdout, "%s\t%d\t%s\t%d bytes\t%d wire\tdns %.1fms connect %.1fms tls %.1fms first %.1fms total %.1fms\tconn %d%s\n",
			l.URL, l.Status, kind, l.Bytes, l.WireBytes, l.DNSMs, l.ConnectMs, l.TLSMs, l.FirstByteMs, l.TotalMs, l.Conn, p)
		if err == nil && r.Err != nil && !*asJSON {
			_, err = fmt.Fprintf(e.stdout, "\t%v\n", r.Err)
		}
		return err
	}
	for _, r := range robotsLines {
		if err := print(r, 0); err != nil {
			return err
		}
	}
	for i, r := range lines {
		if r.Kind != collector.OK {
			failed++
		}
		if err := print(r, i+1); err != nil {
			return err
		}
	}
	for _, g := range groups {
		col.Release(g.batch)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d URLs failed", failed, len(urls))
	}
	return nil
}

// fetchTarget is the URL to fetch for raw and the origin it is fetched
// from. A Unicode host name is written in A-labels ("xn--"), as a crawl
// fetches it (urlnorm.ASCIIHost): the collector and the resolver take ASCII
// host names only; the rest of the URL is left as given. The origin is
// spelt as the collector keys it (host in lower case, the port as a number,
// the scheme's default when none), so that "http://H:080/" and "http://h/"
// share the one connection the collector keeps per origin.
func fetchTarget(raw string) (target, origin string, err error) {
	// The collector's parse: it takes a path whose '%' starts no escape
	// ("/home%"), which net/url refuses and a crawl fetches.
	u, err := collector.ParseURL(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", "", errors.New("is not an http or https URL")
	}
	target = raw
	if !isASCII(u.Host) {
		h, err := urlnorm.ASCIIHost(u.Hostname())
		if err != nil {
			return "", "", fmt.Errorf("has a host that is not a host name: %v", err)
		}
		if p := u.Port(); p != "" {
			h += ":" + p
		}
		// Only the host is replaced: u.String() would write the path
		// as net/url does, not as given.
		i := strings.Index(raw, "://") + 3
		j := len(raw)
		if k := strings.IndexAny(raw[i:], "/?#"); k >= 0 {
			j = i + k
		}
		if at := strings.LastIndexByte(raw[i:j], '@'); at >= 0 {
			i += at + 1
		}
		target = raw[:i] + h + raw[j:]
	}
	port := uint64(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.ParseUint(p, 10, 16); err != nil || port == 0 {
			return "", "", fmt.Errorf("has port %q, not 1..65535", p)
		}
	}
	return target, u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + strconv.FormatUint(port, 10), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// maxCAFile bounds what --ca reads: a system's whole CA bundle is a few
// hundred KiB.
const maxCAFile = 16 << 20

// readCAFile reads the PEM certificates of path (--ca), at most maxCAFile
// bytes: a device that never ends (/dev/zero) was read into memory until
// the OOM killer ended the process.
func readCAFile(path string) ([]*x509.Certificate, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("%s is over %d MiB: not a file of CA certificates", path, maxCAFile>>20)
	}
	var certs []*x509.Certificate
	for len(data) > 0 {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return certs, nil
}
