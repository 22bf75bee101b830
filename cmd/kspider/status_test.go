package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
	"github.com/kspider/kspider/spider/status"
	"github.com/kspider/kspider/tools/testenv"
	"github.com/kspider/kspider/tools/testweb"
)

// lockedBuffer is a stderr many goroutines write to and the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var statusLine = regexp.MustCompile(`status page: http://([^/]+)/`)

// crawlSetup starts a plain test web and writes a config for it whose
// status page listens on a free loopback port.
func crawlSetup(t *testing.T, hosts, pages, nseeds int, delay string) (conf, ca, dir string, srv *testweb.Server) {
	t.Helper()
	srv, err := testweb.Start(context.Background(), testweb.Generate(testweb.Config{Hosts: hosts, Seed: 9, MaxPages: pages, Seeds: nseeds, Plain: true}),
		testweb.ServeConfig{HTTPAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tmp := t.TempDir()
	ca = filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(ca, srv.CACertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(tmp, "data")
	conf = filepath.Join(tmp, "crawl.toml")
	var seeds []string
	for _, u := range srv.SeedURLs() {
		seeds = append(seeds, strconv.Quote(u))
	}
	toml := fmt.Sprintf("seeds = [%s]\ndata_dir = %q\nfetchers = 8\ndns_servers = [%q]\ncontact = \"https://example.org/bot\"\n"+
		"status = \"127.0.0.1:0\"\n[politeness]\ndelay = %q\n[limits]\nmax_depth = 3\n", strings.Join(seeds, ", "), dir, srv.DNSAddr(), delay)
	if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf, ca, dir, srv
}

// startRun runs `kspider run` in the background; it returns the status
// page's address once printed, and a channel with the exit code.
func startRun(t *testing.T, ctx context.Context, args ...string) (addr string, stderr *lockedBuffer, exit chan int) {
	t.Helper()
	stderr, exit = &lockedBuffer{}, make(chan int, 1)
	go func() { exit <- run(ctx, env{stdout: io.Discard, stderr: stderr}, append([]string{"run"}, args...)) }()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if m := statusLine.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, exit
		}
		select {
		case code := <-exit:
			t.Fatalf("run ended (exit %d) before its status page started:\n%s", code, stderr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status page line within 30 s:\n%s", stderr)
		}
	}
}

func getStatus(t *testing.T, addr string) *spider.Status {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st spider.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func waitStatus(t *testing.T, addr, what string, cond func(*spider.Status) bool) *spider.Status {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := getStatus(t, addr)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute; last status %+v", what, st.Totals)
		}
		time.Sleep(5 * time.Millisecond) // polling a server, bounded by the deadline
	}
}

// TestStatusAndCtl runs `kspider run` with its status page, steers it with
// `kspider ctl` (pause, set, resume, drain: exit 0), and runs it again to
// the end.
func TestStatusAndCtl(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 30, 40, 1, "300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--config", conf, "--ca", ca, "--quiet"}
	addr, stderr, exit := startRun(t, ctx, args...)
	// The file is named, the token not printed: stderr goes to logs (the
	// journal of deploy/kspider.service) that others may read.
	tok, err := os.ReadFile(filepath.Join(dir, "STATUS_TOKEN"))
	if err != nil || strings.Contains(stderr.String(), strings.TrimSpace(string(tok))) ||
		!strings.Contains(stderr.String(), "control token in "+filepath.Join(dir, "STATUS_TOKEN")) {
		t.Fatalf("token file %q (%v) printed, or not named:\n%s", tok, err, stderr)
	}
	waitStatus(t, addr, "some pages", func(st *spider.Status) bool { return st.Totals.Pages >= 5 })
	// The metrics of a real crawl pass promtool too.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte("\nkspider_pages_stored_total ")) || !bytes.Contains(metrics, []byte("\nkspider_fetch_duration_seconds_count ")) {
		t.Errorf("metrics lack the page counters:\n%.2000s", metrics)
	}
	check := exec.Command(testenv.Binary(t, "promtool", "prometheus"), "check", "metrics")
	check.Stdin = bytes.NewReader(metrics)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	ctl := func(want int, a ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "", append([]string{"ctl"}, a...)...)
		if code != want {
			t.Fatalf("ctl %v: exit %d, want %d:\n%s%s", a, code, want, out, errOut)
		}
		return out + errOut
	}
	if out := ctl(1, "pause", "--status", addr, "--dir", t.TempDir()); !strings.Contains(out, "STATUS_TOKEN") {
		t.Errorf("ctl without a token file: %s", out)
	}
	ctl(2, "reboot", "--status", addr, "--dir", dir)
	ctl(2, "set", "delay", "--status", addr, "--dir", dir)
	if out := ctl(0, "pause", "--status", addr, "--dir", dir); !strings.Contains(out, "paused") {
		t.Errorf("ctl pause: %s", out)
	}
	st := waitStatus(t, addr, "no list out", func(st *spider.Status) bool { return st.Fetchers.Busy == 0 })
	if st.State != "paused" {
		t.Errorf("state %q after ctl pause", st.State)
	}
	if out := ctl(1, "set", "fetchers=1000", "--status", addr, "--dir", dir); !strings.Contains(out, "fetchers") {
		t.Errorf("ctl set fetchers=1000: %s", out)
	}
	// A longer delay, not a shorter one: the crawl must still be running
	// when the drain below reaches it (with 50 ms it once ended first).
	ctl(0, "set", "delay=3s", "fetchers=4", "--status", addr, "--dir", dir)
	if f := getStatus(t, addr).Fetchers; f.Max != 4 || f.DelaySecs != 3 {
		t.Errorf("after set: %+v", f)
	}
	ctl(0, "resume", "--status", addr, "--dir", dir)
	pages := st.Totals.Pages
	waitStatus(t, addr, "pages after resume", func(st *spider.Status) bool { return st.Totals.Pages > pages })
	ctl(0, "drain", "--status", addr, "--dir", dir)
	select {
	case code := <-exit:
		if code != 0 || !strings.Contains(stderr.String(), "crawl drained (run again") || strings.Contains(stderr.String(), "interrupted") {
			t.Fatalf("drained run: exit %d:\n%s", code, stderr)
		}
		// The summary of a drained run is whole: its counts, and the
		// damage and cluster lines it may hold, were left out.
		if !strings.Contains(stderr.String(), "\nfetched ") {
			t.Errorf("drained run: no 'fetched ..., stored ...' line:\n%s", stderr)
		}
	case <-ctx.Done():
		t.Fatal("the drained run did not end")
	}
	code, _, errOut := runCmd(t, "", append([]string{"run", "--status", "off"}, args...)...)
	if code != 0 || strings.Contains(errOut, "status page") {
		t.Fatalf("run after the drain: exit %d:\n%s", code, errOut)
	}
}

// TestCtlBadStatus: a --status that is not host:port is a usage error
// before the token is read or sent ("ADDR/x?" made the request go to
// another path of whatever answered there, token and all).
func TestCtlBadStatus(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"127.0.0.1:1/x?", "127.0.0.1", "u@127.0.0.1:1", "127.0.0.1:1#"} {
		code, _, errOut := runCmd(t, "", "ctl", "pause", "--status", bad, "--dir", dir)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("--status %q is not host:port", bad)) {
			t.Errorf("ctl --status %s: exit %d, want 2 naming it:\n%s", bad, code, errOut)
		}
	}
}

// Idle connections held open on the status page wait past maxStatusConns
// instead of taking file descriptors without bound; one closed, the page
// answers again.
func TestStatusConnectionLimit(t *testing.T) {
	conf, ca, _, _ := crawlSetup(t, 3, 3, 1, "1h")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, _, exit := startRun(t, ctx, "--config", conf, "--ca", ca, "--quiet")
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range maxStatusConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	get := func(timeout time.Duration) error {
		cl := &http.Client{Timeout: timeout}
		resp, err := cl.Get("http://" + addr + "/status")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(500 * time.Millisecond); err == nil {
		t.Errorf("a request past %d idle connections was answered", maxStatusConns)
	}
	idle[0].Close()
	idle = idle[1:]
	if err := get(30 * time.Second); err != nil {
		t.Errorf("with one idle connection closed: %v", err)
	}
	cancel()
	<-exit
}

// TestStatusCloseWaitsForHandlers: the status server's Close returns only
// once no handler runs, even one that outlives Shutdown's grace second
// (http.Server.Close leaves handlers running), so the node closed after it
// is never read by a request; requests after it are refused.
func TestStatusCloseWaitsForHandlers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	s := &statusServer{done: make(chan struct{})}
	s.srv = &http.Server{Handler: s.gate.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release // a snapshot waiting on a lock the node holds
	}))}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/status"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a handler ran")
	case <-time.After(1500 * time.Millisecond): // past Shutdown's grace second
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return after the handler did")
	}
	rec := httptest.NewRecorder()
	s.gate.wrap(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a request after Close: %d, want 503", rec.Code)
	}
	// It was text/plain where every other answer of the page is JSON.
	var ans struct{ Error string }
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || ans.Error != "the node is closing" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("a request after Close: %q (%s), %v; want JSON {\"error\":\"the node is closing\"}", rec.Body, rec.Header().Get("Content-Type"), err)
	}
}

// TestStatusTokenRefused: a STATUS_TOKEN others can read (a permissions
// slip) turned off the whole status page, /metrics included; now control
// alone is off, said so, and the page and /metrics are served.
func TestStatusTokenRefused(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 3, 3, 1, "1h")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, status.TokenFile), []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, stderr, exit := startRun(t, ctx, "--config", conf, "--ca", ca, "--quiet")
	if out := stderr.String(); !strings.Contains(out, "control requests are refused") || !strings.Contains(out, "control off") {
		t.Errorf("run with a refused token does not say control is off:\n%s", out)
	}
	for _, path := range []string{"/metrics", "/status"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s, want 200", path, resp.Status)
		}
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/control/pause", nil)
	req.Header.Set("Authorization", "Bearer 0123456789abcdef0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("control with the refused token's value: %s, want a refusal", resp.Status)
	}
	// The operator fixes the file, as the warning says, and tries ctl: the
	// node's bare 404 did not say that control was off since its start.
	if err := os.Chmod(filepath.Join(dir, status.TokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "", "ctl", "pause", "--status", addr, "--dir", dir)
	for _, want := range []string{"control off: the token file was refused", "mode -rw-r--r--", "the node's log", "restart the node"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("ctl pause at a node whose token was refused: exit %d, want 1 saying %q:\n%s", code, want, errOut)
		}
	}
	cancel()
	<-exit
}
