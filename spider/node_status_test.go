package spider

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/collector"
	"github.com/kspider/kspider/resolver"
	"github.com/kspider/kspider/spider/cluster"
	"github.com/kspider/kspider/tools/testweb"
)

// statusFields are the documented JSON fields of Status (node_status.go),
// by object; "" is the top level.
var statusFields = map[string][]string{
	"": {"version", "time", "started", "uptime_seconds", "state", "totals", "rates", "history", "phase", "scheduler",
		"fetchers", "dns", "storage", "http_statuses", "errors", "fetch_seconds", "top_queued_hosts", "slowest_hosts", "peers"},
	"totals": {"pages", "fetched", "bytes", "urls_known", "queue", "in_list", "in_progress", "stalled", "completed",
		"redirected", "failed", "fetch_errors", "robots_denied", "links", "admitted", "rejected", "filtered",
		"robots_over_budget", "robots_cache_bytes", "robots_cache_evicted", "robots_abandoned"},
	"rates":   {"pages_per_second", "mb_per_second", "avg_pages_per_second", "avg_mb_per_second"},
	"history": {"step_seconds", "pages_per_second", "mb_per_second"},
	"phase": {"active", "phases", "slot", "next_swap", "seconds_to_swap", "in_guard", "may_start", "clock_safe",
		"clock_synced", "clock_offset_seconds", "clock_reason", "clock_source"},
	"scheduler": {"window_size", "window_lo", "window_scan", "window_end", "rows", "rows_used", "hosts_in_view",
		"ready", "out", "ip_blocked", "buckets"},
	"fetchers":           {"busy", "max", "politeness_delay_seconds", "paused_seconds"},
	"dns":                {"hits", "misses", "hit_rate", "queries", "timeouts", "prefetched", "prefetch_failed", "prefetch_late"},
	"storage[]":          {"dir", "bytes", "records", "free_bytes", "size_bytes", "write_bytes_per_second", "failed"},
	"fetch_seconds":      {"buckets", "count", "sum"},
	"top_queued_hosts[]": {"host", "queued"},
	"slowest_hosts[]":    {"host", "seconds_per_page", "pages", "at"},
	"peers[]": {"node", "addr", "up", "queue", "spilled_bytes", "last_heard", "dropped_forged", "dropped_replayed",
		"dropped_bad", "config_mismatch", "probe_rounds", "lost_dir", "acks_merged", "stale_control"},
}

// checkFields fails unless the JSON of st has exactly the documented
// fields (list elements are checked when the list has one).
func checkFields(t *testing.T, st *Status) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	for path, want := range statusFields {
		var obj map[string]any
		switch {
		case path == "":
			obj = top
		case strings.HasSuffix(path, "[]"):
			l, _ := top[strings.TrimSuffix(path, "[]")].([]any)
			if len(l) == 0 {
				continue
			}
			obj, _ = l[0].(map[string]any)
		default:
			obj, _ = top[path].(map[string]any)
		}
		if obj == nil {
			t.Errorf("%q: not an object in %s", path, b)
			continue
		}
		var got []string
		for k := range obj {
			got = append(got, k)
		}
		sort.Strings(got)
		w := append([]string(nil), want...)
		sort.Strings(w)
		if strings.Join(got, ",") != strings.Join(w, ",") {
			t.Errorf("%q: fields %v, documented %v", path, got, w)
		}
	}
	return top
}

// TestNodeStatusMoves crawls a small test web, taking a Status whenever a
// page more is stored: every documented field is there, the counts grow,
// and at the end they agree with the summary and the store.
func TestNodeStatusMoves(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 12, Seed: 5, MaxPages: 30, MeanPageSize: 3000, Seeds: 2, Plain: true}, &bytes.Buffer{})
	dir := t.TempDir()
	cfg := nodeConfig(t, dir, srv, lookup, 2)
	dnsCalls := 0
	cfg.DNSStats = func() (s resolver.Stats) { dnsCalls++; s.Hits, s.Lookups = 3, 1; return }
	cfg.Peers = func() []PeerStatus { return []PeerStatus{{Node: 1, Addr: "127.0.0.1:1", Up: true}} }
	n, err := OpenNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := n.Status(); st.State != "open" || st.Totals.Pages != 0 {
		t.Fatalf("before Run: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := goRun(ctx, n)
	var prev *Status
	moves := 0
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-r.done:
			running = false
		case <-tick.C:
		}
		st := n.Status()
		if prev != nil && st.Totals.Pages > prev.Totals.Pages {
			moves++
			if st.Totals.Bytes < prev.Totals.Bytes || st.Totals.URLs < prev.Totals.URLs || st.Totals.Fetched < prev.Totals.Fetched {
				t.Fatalf("counts went back: %+v then %+v", prev.Totals, st.Totals)
			}
		}
		if running && st.State != "running" && st.State != "stopped" { // stopped: Run is returning
			t.Fatalf("state %q while running", st.State)
		}
		prev = st
	}
	sum := r.sum
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := n.Status()
	top := checkFields(t, st)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if moves < 3 {
		t.Errorf("the pages count moved %d times during the crawl", moves)
	}
	tt := st.Totals
	if st.State != "stopped" || tt.Pages != sum.Stored || tt.Fetched != sum.Fetched || tt.URLs != uint64(sum.URLs) || tt.Queue != 0 {
		t.Errorf("after Run: state %s, totals %+v, summary %+v", st.State, tt, *sum)
	}
	if got := uint64(len(storedURLs(t, dir))); tt.Pages != got || tt.Completed+tt.Redirected != got {
		t.Errorf("status says %d pages, %d completed + %d redirected; the store holds %d", tt.Pages, tt.Completed, tt.Redirected, got)
	}
	if st.HTTPStatuses["200"] == 0 || st.FetchSeconds.Count != tt.Fetched || st.FetchSeconds.Sum <= 0 {
		t.Errorf("statuses %v, fetch histogram %+v, fetched %d", st.HTTPStatuses, st.FetchSeconds, tt.Fetched)
	}
	if len(st.Storage) != 1 || st.Storage[0].Records != tt.Pages || st.Storage[0].Bytes == 0 || st.Storage[0].Free == 0 {
		t.Errorf("storage %+v", st.Storage)
	}
	if len(st.Slowest) == 0 || st.Slowest[0].Host == "" || len(st.Slowest) > statusTopK {
		t.Errorf("slowest hosts %+v", st.Slowest)
	}
	if st.DNS.HitRate != 0.75 || dnsCalls == 0 || len(st.Peers) != 1 {
		t.Errorf("dns %+v, peers %+v", st.DNS, st.Peers)
	}
	if st.Phase.Active != 0 || st.Phase.Phases != 1 || !st.Phase.ClockSafe || st.Phase.ClockSource != "system" {
		t.Errorf("phase %+v", st.Phase)
	}
	if _, ok := top["errors"].(map[string]any)["timeout"]; !ok {
		t.Errorf("errors lack the timeout kind: %v", top["errors"])
	}
	if c := n.Counters(); c.Pages != tt.Pages || c.URLs != tt.URLs {
		t.Errorf("progress counters %+v disagree with status totals %+v", c, tt)
	}
}

// TestStatusHistory feeds the ring samples on a fake clock.
func TestStatusHistory(t *testing.T) {
	var s statusState
	// 100 pages and 1 MB a second for 25 s, then nothing for 10 s.
	for i := 0; i <= 35; i++ {
		k := uint64(min(i, 25))
		s.record(time.Duration(i)*time.Second, 100*k, 1e6*k, []DiskStatus{{Bytes: 2000 * uint64(i)}})
	}
	var st Status
	st.Storage = []DiskStatus{{}}
	s.history(&st)
	h := st.History
	if h.StepSeconds != 1 || len(h.PagesPerSecond) != 35 || len(h.MBPerSecond) != 35 {
		t.Fatalf("history %+v", h)
	}
	if h.PagesPerSecond[0] != 100 || h.PagesPerSecond[24] != 100 || h.PagesPerSecond[25] != 0 || h.MBPerSecond[1] != 1 {
		t.Errorf("history %+v", h)
	}
	if st.Rates.PagesPerSecond != 0 || st.Storage[0].WriteRate != 2000 {
		t.Errorf("rates %+v, write rate %v", st.Rates, st.Storage[0].WriteRate)
	}
	// Past ten minutes, one point per 10 s: steps end at the newest sample.
	for i := 36; i <= historyFine+5; i++ {
		s.record(time.Duration(i)*time.Second, 2500+uint64(i-25)*10, 0, nil)
	}
	s.history(&st)
	if h := st.History; h.StepSeconds != 10 || len(h.PagesPerSecond) != (historyFine+5)/10 || h.PagesPerSecond[len(h.PagesPerSecond)-1] != 10 {
		t.Fatalf("history past ten minutes: step %d, %d points, last %v", h.StepSeconds, len(h.PagesPerSecond), h.PagesPerSecond)
	}
	// An hour and more: the ring keeps its size.
	for i := 36; i < 2*historySeconds; i++ {
		s.record(time.Duration(i)*time.Second, 0, 0, nil)
	}
	s.history(&st)
	if len(st.History.PagesPerSecond) != historySeconds/historyStep {
		t.Errorf("after two hours: %d history points", len(st.History.PagesPerSecond))
	}
}

// TestStatusClockSteppedBack: the system clock is stepped back an hour
// (by hand, a VM restored, an NTP daemon's step) during a run. Measured on
// the wall clock, the page's rates were 0 and its uptime negative until
// the clock caught up; on the monotonic clock they go on.
func TestStatusClockSteppedBack(t *testing.T) {
	noLookup := func(context.Context, string) ([]netip.Addr, error) { return nil, nil }
	n, err := OpenNode(NodeConfig{Dir: t.TempDir(), Collector: collector.Config{Lookup: noLookup}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mono, back time.Duration
	n.ss.clock = func() (time.Time, time.Duration) { return base.Add(mono - back), mono }
	n.ss.begin()
	for i := 1; i <= 20; i++ {
		n.st.durable.Add(100)
		mono += time.Second
		if i == 10 {
			back = time.Hour
		}
		n.sample()
	}
	st := n.Status()
	if st.Uptime != 20 {
		t.Errorf("uptime %v s after 20 s with the clock stepped back an hour; want 20", st.Uptime)
	}
	if st.Rates.PagesPerSecond != 100 || st.Rates.AvgPagesPerSecond != 100 {
		t.Errorf("rates %+v at 100 pages a second with the clock stepped back an hour", st.Rates)
	}
	for i, p := range st.History.PagesPerSecond {
		if p != 100 {
			t.Errorf("history point %d is %v pages a second; want 100", i, p)
		}
	}
	if want := base.Add(mono - back); !st.Time.Equal(want) || !st.Started.Equal(base) {
		t.Errorf("time %v, started %v: instants are the system clock's (%v, %v)", st.Time, st.Started, want, base)
	}
}

// TestSlowestHostsBounded: the table keeps the slowest statusTopK hosts.
func TestSlowestHostsBounded(t *testing.T) {
	var s statusState
	now := time.Unix(1_000_000, 0)
	for h := uint32(0); h < 100; h++ {
		ms := time.Duration((h*37)%100) * time.Millisecond
		b := &collector.Batch{Results: []collector.Result{{Status: 200, Timings: collector.Timings{Total: ms}}}}
		s.countList(h, b, now)
	}
	if s.nslow != statusTopK {
		t.Fatalf("%d entries", s.nslow)
	}
	for _, e := range s.slow[:s.nslow] {
		if e.ns < int64(90*time.Millisecond) {
			t.Errorf("kept a host of %v per page", time.Duration(e.ns))
		}
	}
	// Stale entries give way to any newer host.
	later := now.Add(slowStale + time.Second)
	b := &collector.Batch{Results: []collector.Result{{Status: 200, Timings: collector.Timings{Total: time.Millisecond}}}}
	s.countList(500, b, later)
	found := false
	for _, e := range s.slow[:s.nslow] {
		found = found || e.host == 500
	}
	if !found {
		t.Error("a fresh host did not replace a stale entry")
	}
}

// TestClusterPeersInStatus: in a cluster, the snapshot lists the other
// nodes as the communicator sees them.
func TestClusterPeersInStatus(t *testing.T) {
	srv, lookup := startWeb(t, testweb.Config{Hosts: 10, Seed: 3, MaxPages: 10, MeanPageSize: 2000, Seeds: 2, Plain: true}, &bytes.Buffer{})
	cfgs := clusterNodes(t, 2, srv, lookup, 2, 2*time.Second, cluster.ByHost)
	nodes := make([]*Node, len(cfgs))
	for i, cfg := range cfgs {
		n, err := OpenNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes[i] = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			if _, err := n.Run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, n := range nodes {
		ps := n.Status().Peers
		if len(ps) != 1 || ps[0].Node != 1-i || ps[0].Addr == "" || !ps[0].Up || ps[0].LastHeard.IsZero() {
			t.Errorf("node %d: peers %+v", i, ps)
		}
	}
}
