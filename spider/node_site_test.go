package spider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/scheduler"
)

// siteNodeConfig serves h on 127.0.0.1 as the host site.test and returns
// the config of a node crawling its root, at depth 1, with its lookup and
// its waits short: the set-up of the tests that need one hand-made site.
func siteNodeConfig(t *testing.T, h http.HandlerFunc) (cfg NodeConfig, seed string) {
	t.Helper()
	srv := &http.Server{Handler: h}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	seed = fmt.Sprintf("http://site.test:%d/", ln.Addr().(*net.TCPAddr).Port)
	cfg = nodeConfigFor(t, t.TempDir(), []string{seed}, func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}, nil, 1)
	cfg.Collector = collector.Config{Fetchers: 2, ReconnectGap: 10 * time.Millisecond, FirstByte: 30 * time.Second, ResponseTimeout: 30 * time.Second}
	cfg.Scheduler = scheduler.Config{PartialWait: time.Millisecond, MinDelay: 10 * time.Millisecond, MaxRetries: 5}
	return cfg, seed
}
