package collector

import (
	"bytes"
	"context"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/tools/testweb"
)

const testUA = "kspider-test/1.0 (+http://127.0.0.1/bot)"

// lockedBuffer is a request log the server writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// startWeb serves a generated web on loopback with its DNS server and
// returns it with its request log and a lookup through kspider's resolver.
func startWeb(t testing.TB, cfg testweb.Config, sc testweb.ServeConfig) (*testweb.Server, *lockedBuffer, LookupFunc) {
	t.Helper()
	log := &lockedBuffer{}
	sc.HTTPAddr, sc.DNSAddr, sc.Log = "127.0.0.1:0", "127.0.0.1:0", log
	srv, err := testweb.Start(context.Background(), testweb.Generate(cfg), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	res, err := resolver.New(resolver.Config{Servers: []string{srv.DNSAddr()}, Timeout: 2 * time.Second, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return srv, log, func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
}

// newCollector makes a collector for srv with test timeouts.
func newCollector(t testing.TB, srv *testweb.Server, lookup LookupFunc, cfg Config) *Collector {
	t.Helper()
	cfg.UserAgent, cfg.Lookup, cfg.RootCAs = testUA, lookup, srv.CertPool()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hostLists groups the URLs of docs by origin, in a stable order.
func hostLists(docs []testweb.Doc, keep func(testweb.Doc) bool) map[string][]string {
	m := map[string][]string{}
	for _, d := range docs {
		if !keep(d) {
			continue
		}
		i := strings.Index(d.URL[8:], "/") + 8
		m[d.URL[:i]] = append(m[d.URL[:i]], d.URL)
	}
	for _, l := range m {
		sort.Strings(l)
	}
	return m
}

func listOf(urls []string) *List {
	l := &List{}
	for i, u := range urls {
		l.Requests = append(l.Requests, Request{ID: uint64(i), URL: u})
	}
	return l
}

// audit stops the web, so that every request and connection is logged,
// and audits its request log.
func audit(t testing.TB, srv *testweb.Server, log *lockedBuffer) *testweb.Report {
	t.Helper()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := testweb.Audit(bytes.NewReader(log.Bytes()), testweb.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
