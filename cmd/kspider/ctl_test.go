package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kspider/kspider/spider/status"
)

// fakeNode answers control requests as a node does, counting those that
// carry tok.
func fakeNode(t *testing.T, tok string) (addr string, got *atomic.Int32) {
	got = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+tok {
			got.Add(1)
		}
		w.Write([]byte(`{"ok":true,"state":"paused"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), got
}

// TestCtlNoProxy: ctl sends the token to the node itself, never through
// $HTTP_PROXY, which Go's default client used for every name but
// localhost and loopback IPs ("LOCALHOST" here, a node's address on another
// machine in practice). Run in a child process: Go reads the proxy
// variables once per process.
func TestCtlNoProxy(t *testing.T) {
	dir := t.TempDir()
	tok, err := status.Token(dir)
	if err != nil {
		t.Fatal(err)
	}
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		http.Error(w, "a proxy", http.StatusBadGateway)
	}))
	defer proxy.Close()
	addr, served := fakeNode(t, tok)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"ctl", "pause", "--status", "LOCALHOST:" + port, "--dir", dir}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLabChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KSPIDER_LAB_CHILD=run", "KSPIDER_LAB_ARGS="+strings.Join(args, "\x1f"),
		"HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if n := proxied.Load(); n > 0 {
		t.Errorf("ctl went through $HTTP_PROXY (%d requests), the token with it:\n%s", n, out)
	}
	if err != nil || served.Load() != 1 || !strings.Contains(string(out), "pause: ok, node paused") {
		t.Errorf("ctl pause: %v, %d requests with the token at the node:\n%s", err, served.Load(), out)
	}
}
