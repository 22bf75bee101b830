package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kspider/kspider/spider"
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

// TestCtlRefusesAnotherUsersServer: whatever listens on the address ctl
// is given is sent the token; a process of another user holding the port
// (the node stopped, or listening elsewhere) must not get it. The server
// here runs as nobody: its sockets are made and accepted on a thread whose
// file system uid is 65534 (so the test needs root).
func TestCtlRefusesAnotherUsersServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a server as another user")
	}
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: ctl cannot tell who serves an address here")
	}
	dir := t.TempDir()
	tok, err := status.Token(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), tok) {
			got.Add(1)
		}
		w.Write([]byte(`{"ok":true,"state":"paused"}`))
	})}
	ready := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, its uid with it.
		runtime.LockOSThread()
		if err := syscall.Setfsuid(65534); err != nil {
			ready <- err
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			ready <- err
			return
		}
		addr <- ln.Addr().String()
		ready <- nil
		srv.Serve(ln)
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a := <-addr
	code, out, errOut := runCmd(t, "", "ctl", "pause", "--status", a, "--dir", dir)
	if got.Load() > 0 {
		t.Errorf("the token reached a server of uid 65534 (%d requests)", got.Load())
	}
	if code != 1 || !strings.Contains(errOut, a+" is served by a process of uid 65534, not of uid 0") {
		t.Errorf("ctl pause at another user's server: exit %d, want 1 naming the uids:\n%s%s", code, out, errOut)
	}
}

// TestSocketOwner finds this process's own sockets, both ends, in
// /proc/net/tcp, over IPv4 and IPv6.
func TestSocketOwner(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				defer c.Close()
				c.Read(make([]byte, 1))
			}
		}()
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := checkServerOwner(c, uint32(os.Getuid())); err != nil {
			t.Errorf("%s: own server: %v", network, err)
		}
		// The same ends spelled as IPv4-mapped IPv6 addresses, as a
		// client dialling [::ffff:127.0.0.1] has them.
		l, r := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
		mapped := func(a netip.AddrPort) netip.AddrPort {
			return netip.AddrPortFrom(netip.AddrFrom16(a.Addr().As16()), a.Port())
		}
		if uid, found, err := socketOwner(mapped(r), mapped(l)); err != nil || !found || uid != uint32(os.Getuid()) {
			t.Errorf("%s: the server's end, mapped: uid %d, found %v, %v", network, uid, found, err)
		}
		if os.Getuid() == 0 {
			// Root may read any token file: its servers pass.
			if err := checkServerOwner(c, 65534); err != nil {
				t.Errorf("%s: root's server for a token of uid 65534: %v", network, err)
			}
		} else if _, ok := checkServerOwner(c, uint32(os.Getuid())+1).(*foreignServerError); !ok {
			t.Errorf("%s: a server of uid %d taken for one of uid %d", network, os.Getuid(), os.Getuid()+1)
		}
	}
}

// TestCtlWrongNode: a node that refuses the token is another data
// directory's (two nodes on one machine, ctl given the other's --status or
// --dir); ctl says so, naming the token file and the address, where the
// node's "missing or wrong token" alone had the operator suspect the file.
func TestCtlWrongNode(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error":"missing or wrong token (Authorization: Bearer <token from the data directory>)"}`))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	code, _, errOut := runCmd(t, "", "ctl", "drain", "--status", addr, "--dir", dir)
	want := "the node at " + addr + " refused the token of " + filepath.Join(dir, status.TokenFile)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("ctl at another node: exit %d, want 1 with %q:\n%s", code, want, errOut)
	}
}

// TestCtlAnswerNotOK: a 200 whose JSON does not say ok (another server on
// the port, a proxy's page) is no success: ctl printed "pause: ok, node ",
// exit 0, and the node ran on unpaused.
func TestCtlAnswerNotOK(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{}`, `{"ok":false,"state":"running"}`, `[]`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		addr := srv.Listener.Addr().String()
		code, out, errOut := runCmd(t, "", "ctl", "pause", "--status", addr, "--dir", dir)
		srv.Close()
		if code != 1 || strings.Contains(out, "ok") || !strings.Contains(errOut, addr) {
			t.Errorf("answer %s: exit %d, want 1 naming %s:\n%s%s", body, code, addr, out, errOut)
		}
	}
}

// TestCtlFindsStatusAddr: ctl given only the data directory steers the
// node wherever its status page listens (here a port chosen at the
// listen); it went to 127.0.0.1:7411 whatever the node's config said.
// Once the run ended, ctl says no node runs there.
func TestCtlFindsStatusAddr(t *testing.T) {
	conf, ca, dir, _ := crawlSetup(t, 30, 40, 1, "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, stderr, exit := startRun(t, ctx, "--config", conf, "--ca", ca, "--quiet")
	if a, err := spider.ReadStatusAddr(dir); err != nil || a != addr {
		t.Errorf("STATUS_ADDR: %q, %v; the page listens on %s", a, err, addr)
	}
	if code, out, errOut := runCmd(t, "", "ctl", "pause", "--dir", dir); code != 0 || !strings.Contains(out, "pause: ok, node paused") {
		t.Errorf("ctl pause --dir %s (no --status): exit %d:\n%s%s", dir, code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "", "ctl", "drain", "--dir", dir); code != 0 {
		t.Errorf("ctl drain --dir %s (no --status): exit %d:\n%s%s", dir, code, out, errOut)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("drained run: exit %d:\n%s", code, stderr)
		}
	case <-ctx.Done():
		t.Fatalf("the run did not end after ctl drain:\n%s", stderr)
	}
	code, _, errOut := runCmd(t, "", "ctl", "pause", "--dir", dir)
	if code != 1 || !strings.Contains(errOut, filepath.Join(dir, spider.StatusAddrFile)+": not found") || !strings.Contains(errOut, "--status") {
		t.Errorf("ctl pause after the run: exit %d, want 1 naming STATUS_ADDR and --status:\n%s", code, errOut)
	}
}

// TestCtlStaleStatusAddr: a STATUS_ADDR a killed node left names an
// address nothing answers at; ctl said only 'no node answers at ADDR', not
// that the address came from that file nor that the node may be stopped.
func TestCtlStaleStatusAddr(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := spider.WriteStatusAddr(dir, addr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "ctl", "pause", "--dir", dir)
	for _, want := range []string{"no node answers at " + addr, filepath.Join(dir, spider.StatusAddrFile), "may be stopped", filepath.Join(dir, "LOCK"), "--status"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("ctl pause with a stale STATUS_ADDR: exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
		}
	}
	// An address given with --status is not said to come from the file.
	_, _, errOut = runCmd(t, "", "ctl", "pause", "--dir", dir, "--status", addr)
	if strings.Contains(errOut, spider.StatusAddrFile) {
		t.Errorf("ctl pause --status %s blamed STATUS_ADDR:\n%s", addr, errOut)
	}
}

// TestCtlStaleStatusAddrOtherNode: a STATUS_ADDR a killed node left names
// an address another node's page took since; that node refuses this
// directory's token, and ctl said to give the address of this
// directory's node with --status, not that the address came from the
// file and its node may be stopped.
func TestCtlStaleStatusAddrOtherNode(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status.ReplyError(w, http.StatusForbidden, "missing or wrong token")
	}))
	defer other.Close()
	addr := other.Listener.Addr().String()
	if err := spider.WriteStatusAddr(dir, addr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "ctl", "pause", "--dir", dir)
	for _, want := range []string{"the node at " + addr + ", the address " + filepath.Join(dir, spider.StatusAddrFile) + " records, refused the token", "stopped", "--status"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("ctl pause at another node through a stale STATUS_ADDR: exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
		}
	}
}

// TestCtlStaleStatusAddrOtherServer: a STATUS_ADDR a killed node left
// names an address a server other than a node holds since; ctl said its
// answer was not a node's, not that the address came from the file and
// the node that wrote it may be stopped.
func TestCtlStaleStatusAddrOtherServer(t *testing.T) {
	dir := t.TempDir()
	if _, err := status.Token(dir); err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) }))
	defer other.Close()
	addr := other.Listener.Addr().String()
	if err := spider.WriteStatusAddr(dir, addr); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "ctl", "pause", "--dir", dir)
	for _, want := range []string{addr + ", the address " + filepath.Join(dir, spider.StatusAddrFile) + " records, answered 200 but not ok", "may be stopped", "--status"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("ctl pause at another server through a stale STATUS_ADDR: exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
		}
	}
}

// A --status whose port is out of range (127.0.0.1:99999) passed the
// host:port check, and the error that followed was about the control
// token, not the address; now it is a usage error naming it.
func TestCtlStatusPortOutOfRange(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:http"} {
		code, _, errOut := runCmd(t, "", "ctl", "pause", "--status", addr, "--dir", dir)
		if code != 2 || !strings.Contains(errOut, "is not host:port (a port from 1 to 65535)") {
			t.Errorf("ctl --status %s: exit %d: %s; want 2 naming the address", addr, code, errOut)
		}
	}
}

// TestCtlSetKeyTwice: "ctl set delay=1s delay=10s" sent both, and the node
// took the last: a mistyped line set 10s without a word. Now a key given
// twice with different values is a usage error and nothing is sent; twice
// the same value is that value.
func TestCtlSetKeyTwice(t *testing.T) {
	dir := t.TempDir()
	tok, err := status.Token(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr, got := fakeNode(t, tok)
	code, _, errOut := runCmd(t, "", "ctl", "set", "delay=1s", "delay=10s", "--status", addr, "--dir", dir)
	if code != 2 || !strings.Contains(errOut, `set: delay is given twice, with different values ("1s", "10s")`) || got.Load() != 0 {
		t.Errorf("set delay twice, differently: exit %d, %d requests sent: %s", code, got.Load(), errOut)
	}
	if code, _, errOut := runCmd(t, "", "ctl", "set", "delay=1s", "delay=1s", "--status", addr, "--dir", dir); code != 0 || got.Load() != 1 {
		t.Errorf("set delay twice, the same: exit %d, %d requests sent: %s", code, got.Load(), errOut)
	}
}
