package spider

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kspider/kspider/tools/testweb"
)

// TestNodePerIPLimit crawls a web on which some hosts share an address
// (virtual hosting) with one host per address at a time
// (politeness.per_ip = 1): the web's audit sees at most one connection to
// an address at any time, and the crawl still stores every page.
func TestNodePerIPLimit(t *testing.T) {
	var log bytes.Buffer
	webCfg := testweb.Config{Hosts: 120, Seed: 23, MaxPages: 12, MeanPageSize: 2000, Seeds: 20, Plain: true}
	srv, lookup := startWeb(t, webCfg, &log)
	shared := map[netip.Addr]int{}
	for _, h := range srv.Web().Hosts() {
		shared[h.Addr]++
	}
	most := 0
	for _, n := range shared {
		most = max(most, n)
	}
	if most < 2 {
		t.Fatal("the web has no address shared by two hosts")
	}
	const depth = 3
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, depth)
	cfg.Scheduler.MaxHostsPerIP = 1
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := runNode(t, ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Finished {
		t.Error("the crawl did not finish by itself")
	}
	compareSets(t, storedURLs(t, dir), truthURLs(t, srv, depth))
	entries := checkPolite(t, srv, &log)
	rep := testweb.AuditEntries(entries, testweb.AuditOptions{})
	if rep.MaxConnsPerIP > 1 {
		t.Errorf("%d connections at once to %s (up to %d hosts share an address), want at most 1", rep.MaxConnsPerIP, rep.MaxConnsIP, most)
		logIPOverlaps(t, entries, rep.MaxConnsIP)
	}
}

// logIPOverlaps logs the connections to ip that were open at once, with
// what they served.
func logIPOverlaps(t *testing.T, entries []testweb.Entry, ip string) {
	served := map[uint64]string{}
	var conns []testweb.Entry
	for _, e := range entries {
		switch {
		case e.Kind == "req":
			served[e.Conn] += " " + e.Host + e.Target
		case strings.HasPrefix(e.Server, ip+":"):
			conns = append(conns, e)
		}
	}
	for i, a := range conns {
		for _, b := range conns[i+1:] {
			if a.Start < b.End && b.Start < a.End {
				t.Logf("open together for %v: connection %d (%s) and %d (%s)",
					time.Duration(min(a.End, b.End)-max(a.Start, b.Start)), a.Conn, served[a.Conn], b.Conn, served[b.Conn])
			}
		}
	}
}
