package collector

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/tools/testenv"
	"github.com/kspider/kspider/tools/testweb"
)

// startNginx runs tools/testweb/nginx.sh with two host names per package
// and returns it with a lookup through its dnsmasq.
func startNginx(t *testing.T, keepalive int) (*testweb.Nginx, LookupFunc) {
	t.Helper()
	ng, err := testweb.StartNginx(context.Background(), testweb.NginxOptions{
		NginxBin:    testenv.Binary(t, "nginx", "nginx-light"),
		DnsmasqBin:  testenv.Binary(t, "dnsmasq", "dnsmasq-base"),
		HostsPerDoc: 2, KeepaliveRequests: keepalive})
	if errors.Is(err, testweb.ErrNoDocs) && !testenv.RequireServers() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ng.Stop(); err != nil {
			t.Error(err)
		}
	})
	res, err := resolver.New(resolver.Config{Servers: []string{ng.DNSAddr}, Timeout: time.Second, Network: "ip4"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Close() })
	return ng, func(ctx context.Context, host string) ([]netip.Addr, error) { return res.Lookup(ctx, host) }
}

// docFiles lists the files under root, relative, sorted.
func docFiles(t testing.TB, root string) []string {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestNginx fetches every file of each documentation package nginx serves,
// split over the package's two host names, and checks each byte for byte
// against the file on disk: with pipelining off and at depth 8, and with
// nginx closing every 7 requests (keepalive_requests 7).
func TestNginx(t *testing.T) {
	for _, tc := range []struct {
		name             string
		depth, keepalive int
	}{{"keep-alive", 1, 0}, {"pipelined", 8, 0}, {"keepalive_requests=7", 1, 7}, {"pipelined, keepalive_requests=7", 8, 7}} {
		t.Run(tc.name, func(t *testing.T) {
			ng, lookup := startNginx(t, tc.keepalive)
			c, err := New(Config{UserAgent: testUA, Lookup: lookup, Pipeline: tc.depth, Fetchers: 4, ReconnectGap: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			roots := map[string][]testweb.NginxHost{}
			for _, h := range ng.Hosts {
				roots[h.Root] = append(roots[h.Root], h)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			total, conns, pipelined := 0, 0, 0
			for root, hosts := range roots {
				files := docFiles(t, root)
				for k, h := range hosts {
					l := &List{}
					for i := k; i < len(files); i += len(hosts) {
						u := url.URL{Scheme: "http", Host: h.Name + ":" + strconv.Itoa(ng.Port), Path: "/" + files[i]}
						l.Requests = append(l.Requests, Request{ID: uint64(i), URL: u.String()})
					}
					wg.Go(func() {
						b := c.Fetch(context.Background(), l)
						defer c.Release(b)
						mu.Lock()
						defer mu.Unlock()
						conns += b.Connections
						for i := range b.Results {
							r := &b.Results[i]
							want, err := os.ReadFile(filepath.Join(root, files[r.ID]))
							if err != nil {
								t.Fatal(err)
							}
							if r.Kind != OK || r.Status != 200 || !bytes.Equal(r.Body, want) {
								t.Errorf("%s: %s (%v) status %d, %d bytes, file %d", r.URL, r.Kind, r.Err, r.Status, len(r.Body), len(want))
							}
							if !strings.Contains(string(r.Head), "\r\nServer: nginx") {
								t.Errorf("%s: head %q", r.URL, r.Head)
							}
							if r.Pipelined {
								pipelined++
							}
							total++
						}
					})
				}
			}
			wg.Wait()
			t.Logf("%d files over %d connections, %d pipelined", total, conns, pipelined)
			if tc.keepalive > 0 && conns < total/tc.keepalive {
				t.Errorf("%d connections for %d requests with keepalive_requests %d", conns, total, tc.keepalive)
			}
			if tc.depth > 1 && pipelined < total/2 {
				t.Errorf("only %d of %d requests pipelined", pipelined, total)
			}
		})
	}
}
