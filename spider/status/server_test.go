package status

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/tools/testenv"
)

// fakeNode is a Source and Controller with a fixed snapshot.
type fakeNode struct {
	mu    sync.Mutex
	st    spider.Status
	calls []string
}

func (f *fakeNode) Status() *spider.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.st
	return &s
}
func (f *fakeNode) note(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }
func (f *fakeNode) Pause()        { f.note("pause") }
func (f *fakeNode) Resume()       { f.note("resume") }
func (f *fakeNode) Drain()        { f.note("drain") }
func (f *fakeNode) Set(set ...spider.Setting) error {
	for _, s := range set {
		if s.Key != "delay" {
			return io.EOF
		}
	}
	for _, s := range set {
		f.note(s.Key + "=" + s.Value)
	}
	return nil
}

func sampleStatus() spider.Status {
	return spider.Status{Version: spider.StatusVersion, Time: time.Unix(1e9, 0).UTC(), State: "running", Uptime: 42,
		Totals: spider.StatusTotals{Pages: 123456, Fetched: 130000, Bytes: 9e8, URLs: 777777, InList: 5000,
			RobotsDenied: 44, RobotsOverBudget: 17, RobotsCacheBytes: 3e6, RobotsCacheEvicted: 6, RobotsAbandoned: 8,
			Filtered: map[string]uint64{"too-deep": 9, "cgi": 2}},
		Rates:        spider.StatusRates{PagesPerSecond: 321.5, MBPerSecond: 2.25},
		History:      spider.StatusHistory{StepSeconds: 10, PagesPerSecond: []float64{100, 300, 321.5}, MBPerSecond: []float64{1, 2, 2.25}},
		Phase:        spider.PhaseStatus{Active: 1, Phases: 3, ClockSafe: true, ClockSource: "ntp", SecondsToSwap: 99},
		Scheduler:    spider.SchedulerStatus{WindowSize: 1000, Rows: 16, RowsUsed: 5, Buckets: map[string]int{"FREE": 1, "FETCHING": 4}},
		Fetchers:     spider.FetcherStatus{Busy: 7, Max: 300},
		DNS:          spider.DNSStatus{Hits: 90, Misses: 10, HitRate: 0.9},
		Storage:      []spider.DiskStatus{{Dir: "/data/pages", Bytes: 5e8, Free: 1e10, Size: 2e10}, {Dir: "/data/\xffpages", Free: 1e10}},
		HTTPStatuses: map[string]uint64{"200": 120000, "404": 5000, "301": 5000},
		Errors:       map[string]uint64{"timeout": 3, "dns": 1},
		FetchSeconds: spider.Histogram{Buckets: []spider.Bucket{{LE: 0.1, Count: 5}, {LE: 1, Count: 9}}, Count: 10, Sum: 4.5},
		TopQueued:    []spider.HostQueued{{Host: "big.example", Queued: 99}},
		Slowest:      []spider.HostSlow{{Host: "slow.example", Seconds: 2.5, Pages: 3}},
		Peers: []spider.PeerStatus{{Node: 2, Addr: "10.0.0.2:7400", Up: true, Queue: 12, DroppedForged: 7, DroppedReplayed: 5, DroppedBad: 3,
			ConfigMismatch: []string{"cluster.partition: ours \"url\", theirs \"host\""}, ProbeRounds: 41, LostDir: true, AcksMerged: 17, StaleControl: 4}},
	}
}

func newTestServer(t *testing.T) (*fakeNode, *httptest.Server) {
	f := &fakeNode{st: sampleStatus()}
	srv := httptest.NewServer((&Server{Node: f, Control: f, Token: "secret-token-0123456789"}).Handler())
	t.Cleanup(srv.Close)
	return f, srv
}

func get(t *testing.T, url string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), resp.Header
}

func TestPageRendersNumbersAndChart(t *testing.T) {
	_, srv := newTestServer(t)
	body, h := get(t, srv.URL+"/")
	for _, want := range []string{`id="t-pages" data-value="123456">123,456<`, `id="t-urls" data-value="777777">777,777<`,
		`<svg id="chart" data-points="3"`, `id="line-pages"`, `points="0.0,`, "big.example", "slow.example", "90.0 %",
		`http-equiv="refresh"`, "10.0.0.2:7400", "filtered: too-deep", ">7 / 5 / 3<", "<b>differs:</b> cluster.partition: ours &#34;url&#34;, theirs &#34;host&#34;", "lost its data directory</b>",
		`<td class="v">41</td><td class="v">4</td></tr>`, `id="t-overbudget" data-value="17">17<`, `id="t-robotsabandoned" data-value="8">8<`, ">3.0 MB, 6 evicted<"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing loaded from elsewhere.
	for _, bad := range []string{"<script src", "<link", "http://", "https://", "@import"} {
		if strings.Contains(body, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q", h.Get("Content-Security-Policy"))
	}
}

func TestStatusJSON(t *testing.T) {
	_, srv := newTestServer(t)
	body, _ := get(t, srv.URL+"/status")
	var st spider.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Version != spider.StatusVersion || st.Totals.Pages != 123456 || st.Peers[0].Node != 2 {
		t.Errorf("round trip: %+v", st)
	}
}

func TestMetricsPassPromtool(t *testing.T) {
	_, srv := newTestServer(t)
	body, _ := get(t, srv.URL+"/metrics")
	for _, want := range []string{"kspider_pages_fetched_total 130000", "kspider_pages_stored_total 123456",
		"kspider_bytes_total 9e+08", `kspider_fetch_duration_seconds_bucket{le="0.1"} 5`, "kspider_fetch_duration_seconds_count 10",
		`kspider_http_responses_total{code="404"} 5000`, `kspider_fetch_errors_total{kind="timeout"} 3`,
		`kspider_urls{state="in-list"} 5000`, `kspider_peer_up{node="2"} 1`, "kspider_phase_active 1",
		`kspider_peer_dropped_datagrams_total{kind="forged",node="2"} 7`, `kspider_peer_dropped_datagrams_total{kind="replayed",node="2"} 5`,
		`kspider_peer_config_mismatch{node="2"} 1`, `kspider_peer_probe_rounds_total{node="2"} 41`, `kspider_peer_lost_dir{node="2"} 1`, `kspider_peer_acks_merged_total{node="2"} 17`,
		`kspider_peer_stale_control_total{node="2"} 4`,
		"kspider_robots_over_budget_total 17", "kspider_robots_cache_bytes 3e+06", "kspider_robots_cache_evicted_total 6",
		"kspider_robots_abandoned_total 8",
		// What the store made durable, not what it was handed (lost ones
		// too, after a store failure).
		"# HELP kspider_pages_stored_total Pages the page store made durable."} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	promtool := testenv.Binary(t, "promtool", "prometheus")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func post(t *testing.T, url string, hdr map[string]string, form string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(form))
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestControlNeedsTokenAndOrigin(t *testing.T) {
	f, srv := newTestServer(t)
	auth := "Bearer secret-token-0123456789"
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"no token", nil},
		{"wrong token", map[string]string{"Authorization": "Bearer secret-token-0123456780"}},
		{"token without Bearer", map[string]string{"Authorization": "secret-token-0123456789"}},
		{"foreign Origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}},
		{"null Origin", map[string]string{"Authorization": auth, "Origin": "null"}},
		{"cross-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "cross-site"}},
	} {
		if code, body := post(t, srv.URL+"/control/pause", tc.hdr, ""); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tc.name, code, body)
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("refused requests reached the node: %v", f.calls)
	}
	ok := map[string]string{"Authorization": auth, "Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}
	for _, a := range []string{"pause", "resume", "drain"} {
		if code, body := post(t, srv.URL+"/control/"+a, ok, ""); code != 200 || !strings.Contains(body, `"ok":true`) {
			t.Errorf("%s: %d %s", a, code, body)
		}
	}
	if code, body := post(t, srv.URL+"/control/set", ok, "delay=250ms"); code != 200 {
		t.Errorf("set: %d %s", code, body)
	}
	if code, _ := post(t, srv.URL+"/control/set", ok, "colour=red"); code != 400 {
		t.Errorf("set of an unknown key: %d, want 400", code)
	}
	if code, _ := post(t, srv.URL+"/control/reboot", ok, ""); code != 404 {
		t.Errorf("unknown action: %d, want 404", code)
	}
	if strings.Join(f.calls, " ") != "pause resume drain delay=250ms" {
		t.Errorf("node saw %v", f.calls)
	}
	// GET cannot control.
	resp, err := http.Get(srv.URL + "/control/pause")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /control/pause: %d", resp.StatusCode)
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok, err := Token(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 || len(tok) != 64 {
		t.Fatalf("token %q, file %v %v", tok, fi.Mode(), err)
	}
	if again, err := Token(dir); err != nil || again != tok {
		t.Fatalf("second Token: %q %v", again, err)
	}
	os.Chmod(filepath.Join(dir, TokenFile), 0o644)
	if _, err := ReadToken(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("readable token file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, TokenFile), []byte("short\n"), 0o600)
	os.Chmod(filepath.Join(dir, TokenFile), 0o600)
	if _, err := ReadToken(dir); err == nil {
		t.Fatal("a short token was taken")
	}
	// An empty file (a crash while an older kspider wrote it) is made anew
	// rather than leaving every later run without its page.
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err = Token(dir)
	if err != nil || len(tok) != 64 {
		t.Fatalf("Token over an empty file: %q %v", tok, err)
	}
	if again, err := ReadToken(dir); err != nil || again != tok {
		t.Fatalf("ReadToken after it: %q %v, want %q", again, err, tok)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d files, want STATUS_TOKEN alone", len(ents))
	}
	dir = t.TempDir()
	os.Mkdir(filepath.Join(dir, TokenFile), 0o755)
	if _, err := Token(dir); err == nil || !strings.Contains(err.Error(), "is not a file") {
		t.Errorf("a directory for STATUS_TOKEN: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:7411": true, "[::1]:7411": true, "localhost:1": true,
		"0.0.0.0:7411": false, ":7411": false, "10.1.2.3:80": false, "bad": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

// TestLoopbackRefusesOtherHosts: on loopback, a request naming a host name
// other than localhost (a DNS-rebinding page) is refused, for reading as
// for control; IP addresses and localhost are served.
func TestLoopbackRefusesOtherHosts(t *testing.T) {
	f := &fakeNode{st: sampleStatus()}
	srv := httptest.NewServer((&Server{Node: f, Control: f, Token: "secret-token-0123456789", Loopback: true}).Handler())
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for host, want := range map[string]int{"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200,
		"LOCALHOST": 200, "evil.example:" + port: http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest} {
		for _, path := range []string{"/", "/status", "/metrics"} {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s with Host %q: %s, want %d", path, host, resp.Status, want)
			}
		}
	}
}
